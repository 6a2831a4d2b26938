import { z } from '../../lib/zod.js';
import { publicProcedure } from '../../pipeline/procedures.js';

/**
 * The four prompt generators. Each returns `{ prompt }` text an assistant can send on; the
 * MCP layer also publishes them as MCP prompts (prompts/list, prompts/get).
 */
const code = z.string().min(1).max(200_000);

export const apiDocumentationPrompt = publicProcedure
  .meta({
    keyAccess: 'any',
    description: 'Prompt for generating API documentation from code',
    mcp: { annotations: { readOnlyHint: true }, prompt: true },
  })
  .input(z.lazy(() => z.object({ code, format: z.enum(['markdown', 'openapi', 'json']).default('markdown') })))
  .query(({ input }) => ({
    prompt: [
      `Generate complete API documentation in ${input.format} format for the following code.`,
      'Document every public endpoint or function: purpose, parameters with types, return values, errors, and a usage example.',
      input.format === 'openapi' ? 'Output a valid OpenAPI 3.1 document.' : '',
      '',
      '```',
      input.code,
      '```',
    ]
      .filter((l, i) => l !== '' || i > 2)
      .join('\n'),
  }));

export const codeReviewPrompt = publicProcedure
  .meta({
    keyAccess: 'any',
    description: 'Code review prompt covering security, performance and maintainability',
    mcp: { annotations: { readOnlyHint: true }, prompt: true },
  })
  .input(z.lazy(() => z.object({ code, language: z.string().min(1).max(100), focusArea: z.string().max(500).optional() })))
  .query(({ input }) => ({
    prompt: [
      `Review the following ${input.language} code.`,
      'Cover security (injection, secrets, unsafe input), performance (complexity, I/O, allocations) and maintainability (naming, structure, tests).',
      input.focusArea ? `Pay particular attention to: ${input.focusArea}.` : '',
      'For each finding give the location, the risk, and a concrete fix.',
      '',
      '```' + input.language,
      input.code,
      '```',
    ].join('\n'),
  }));

const LEVEL_HINT = {
  beginner: 'Assume no prior knowledge; use plain language and an everyday analogy.',
  intermediate: 'Assume working knowledge of the field; focus on how it works and trade-offs.',
  advanced: 'Assume expertise; cover internals, edge cases and current research.',
} as const;

export const explainConceptPrompt = publicProcedure
  .meta({
    keyAccess: 'any',
    description: 'Explanation prompt for a concept at a chosen level',
    mcp: { annotations: { readOnlyHint: true }, prompt: true },
  })
  .input(
    z.lazy(() =>
      z.object({
        concept: z.string().min(1).max(1000),
        level: z.enum(['beginner', 'intermediate', 'advanced']),
        includeExamples: z.enum(['yes', 'no']).default('yes'),
      }),
    ),
  )
  .query(({ input }) => ({
    prompt: [
      `Explain the concept "${input.concept}" for a ${input.level} audience.`,
      LEVEL_HINT[input.level],
      input.includeExamples === 'yes' ? 'Include two or three concrete examples.' : 'Do not include examples.',
    ].join('\n'),
  }));

const SEVERITY_HINT = {
  critical: 'Page the on-call lead now, open an incident channel, and post updates every 15 minutes.',
  high: 'Engage the owning team within 30 minutes and post updates hourly.',
  medium: 'Handle within the business day; track in the incident log.',
  low: 'Schedule the fix; no escalation needed.',
} as const;

export const incidentResponsePrompt = publicProcedure
  .meta({
    keyAccess: 'any',
    description: 'Incident response guidance for a described incident',
    mcp: { annotations: { readOnlyHint: true }, prompt: true },
  })
  .input(
    z.lazy(() =>
      z.object({
        description: z.string().min(1).max(20_000),
        severity: z.enum(['critical', 'high', 'medium', 'low']),
        status: z.string().max(200).optional(),
      }),
    ),
  )
  .query(({ input }) => ({
    prompt: [
      `Incident (severity ${input.severity}${input.status ? `, status: ${input.status}` : ''}):`,
      input.description,
      '',
      `Escalation: ${SEVERITY_HINT[input.severity]}`,
      'Produce: 1) immediate containment steps, 2) diagnosis plan, 3) communication plan, 4) recovery and verification, 5) follow-ups for the post-mortem.',
    ].join('\n'),
  }));
