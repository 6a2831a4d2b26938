import type { AnyRouter } from '@trpc/server';
import { PromptRegistry } from '../../services/prompts/PromptRegistry.js';
import { promptsFromRouter } from './promptsFromRouter.js';

/** The runtime's registry, filled with every procedure published as a prompt. */
export function createPromptRegistry(router: AnyRouter): PromptRegistry {
  const registry = new PromptRegistry();
  for (const prompt of promptsFromRouter(router)) registry.register(prompt);
  return registry;
}
