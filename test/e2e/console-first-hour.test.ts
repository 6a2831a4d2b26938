/**
 * What a new administrator meets in the console's first hour (issue 36), over a real server, the
 * vendors' own clients and Chromium: Anthropic-format calls are labelled `anthropic` (statistics,
 * recent calls), a series keeps its colour in every chart, the Users page lists users before any
 * search, per-process counts say so, and loading the console asks for nothing that is missing
 * (the favicon included).
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { chromium, type Browser, type Page } from 'playwright-core';
import { testService } from '@ai-backend/test-utils/services';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTestUpstream,
  creditTokens,
  rpcCall,
  startAiServer,
  tokenFor,
  waitFor,
  type AiServer,
  type TestUpstream,
} from './helpers/aiGateway.js';

const chromiumService = await testService('chromium');
const CHROMIUM = chromiumService.path ?? '/usr/bin/chromium';

let upstream: TestUpstream;
let gw: AiServer;
let admin: string;

beforeAll(async () => {
  upstream = await createTestUpstream({ outputTokens: 8 });
  gw = await startAiServer(upstream, {
    storage: { type: 'memory' },
    admin: { users: ['fhc-admin'] },
    statistics: { flushIntervalMs: 100 },
  });
  admin = await tokenFor('fhc-admin', { admin: true });
  // Users with calls through three entry points and two providers, the Anthropic wire among them.
  for (const sub of ['fhc-alice', 'fhc-bob']) {
    await creditTokens(gw.url, admin, sub, 100_000, `fhc-${sub}`);
    const token = await tokenFor(sub);
    const claude = new Anthropic({ baseURL: gw.url, apiKey: null, authToken: token, maxRetries: 0 });
    await claude.messages.create({ model: 'anthropic/claude-sonnet-4-5', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] });
    const gpt = new OpenAI({ baseURL: gw.url + '/v1', apiKey: token, maxRetries: 0 });
    await gpt.chat.completions.create({ model: 'openai/gpt-5-mini', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] });
    expect(
      (
        await rpcCall(gw.url, token, 'ai.generateText', {
          content: 'hi',
          systemPrompt: 's',
          provider: 'google',
          options: { maxTokens: 16 },
        })
      ).result,
    ).toBeDefined();
  }
}, 60_000);
afterAll(async () => {
  await gw?.stop();
  await upstream?.close();
});

describe('calls are labelled with the entry point they came through', () => {
  it('/v1/messages calls are `anthropic` in the statistics, the recent calls and the HTTP metrics; /v1/chat/completions `openai`', async () => {
    await waitFor(async () => ((await rpcCall(gw.url, admin, 'admin.statistics', { days: 1 })).result?.total ?? 0) >= 6, {
      timeoutMs: 5_000,
      what: 'the calls in the statistics',
    });
    const stats = (await rpcCall(gw.url, admin, 'admin.statistics', { days: 1 })).result as {
      procedures: Array<{ transport: string; path: string; count: number }>;
    };
    const generate = stats.procedures.filter((p) => p.path === 'ai.generateText');
    expect(Object.fromEntries(generate.map((p) => [p.transport, p.count]))).toEqual({ anthropic: 2, openai: 2, rpc: 2 });
    const recent = (await rpcCall(gw.url, admin, 'admin.recentCalls', { limit: 100 })).result as {
      calls: Array<{ entry: string; procedure: string }>;
    };
    expect(
      recent.calls
        .filter((c) => c.procedure === 'ai.generateText')
        .map((c) => c.entry)
        .sort(),
    ).toEqual(['anthropic', 'anthropic', 'openai', 'openai', 'rpc', 'rpc']);
    // The HTTP requests count under the same name (GET /metrics).
    const metrics = await (await fetch(gw.url + '/metrics', { headers: { authorization: `Bearer ${admin}` } })).text();
    expect(metrics).toMatch(/^ai_backend_http_requests_total\{entry="anthropic",status="2xx"\} 2$/m);
  });
});

describe.skipIf(!chromiumService.ok)('the console in Chromium', () => {
  let browser: Browser;
  let page: Page;
  /** Every response the console's pages got with a 4xx or 5xx status. */
  const failed: string[] = [];

  beforeAll(async () => {
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
      ],
    });
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    page.on('response', (r) => void (r.status() >= 400 && failed.push(`${r.status()} ${new URL(r.url()).pathname}`)));
    await page.goto(`${gw.url}/console/`);
    await page.fill('#token-input', admin);
    await page.click('#token-signin');
    await page.waitForSelector('#stat-tokens');
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
  });

  it("asks for nothing that is missing: the favicon is the console's own SVG, and /favicon.ico is served", async () => {
    // The favicon is fetched in the background: give it time to be asked for.
    await waitFor(async () => (await page.evaluate(() => document.querySelector('link[rel="icon"]')?.getAttribute('href'))) !== undefined, {
      timeoutMs: 2_000,
      what: 'the icon link',
    });
    const icon = await page.evaluate(() => document.querySelector('link[rel="icon"]')?.getAttribute('href'));
    expect(icon).toBe('/console/favicon.svg');
    const res = await fetch(gw.url + icon);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('image/svg+xml');
    // Pages without an icon link make browsers ask the origin for /favicon.ico: a real icon is there.
    const ico = await fetch(gw.url + '/favicon.ico');
    expect(ico.status).toBe(200);
    expect(ico.headers.get('content-type')).toBe('image/x-icon');
    expect([...new Uint8Array(await ico.arrayBuffer()).slice(0, 4)]).toEqual([0, 0, 1, 0]);
    await page.reload();
    await page.waitForSelector('#stat-tokens');
    // A deliberate pause: time for the page's later requests to fail (asserting none does).
    await new Promise((r) => setTimeout(r, 500));
    expect(failed).toEqual([]);
  });

  /** Each chart's series, in drawing order, with the colour of its legend marker. */
  const legendColours = () =>
    page.$$eval('[data-chart]', (figs) =>
      figs.map((fig) => ({
        chart: fig.getAttribute('data-chart')!,
        series: [...fig.querySelectorAll('.u-legend .u-series')]
          .map((row) => ({
            label: row.querySelector('.u-label')?.textContent ?? '',
            colour: getComputedStyle(row.querySelector('.u-marker')!).borderColor,
          }))
          .filter((s) => s.label && s.label !== 'day' && s.label !== 'name'),
      })),
    );

  it('a series keeps its colour in every chart of the overview, wherever it stands in each', async () => {
    const charts = await legendColours();
    const seen = new Map<string, { colour: string; positions: Set<number> }>();
    for (const c of charts) {
      c.series.forEach((s, i) => {
        const known = seen.get(s.label) ?? { colour: s.colour, positions: new Set<number>() };
        expect(s.colour, `${s.label} in ${c.chart}`).toBe(known.colour);
        known.positions.add(i);
        seen.set(s.label, known);
      });
      // Within one chart, different series have different colours.
      expect(new Set(c.series.map((s) => s.colour)).size).toBe(c.series.length);
    }
    // The check means something: some label stands at different places in different charts.
    expect([...seen.values()].some((s) => s.positions.size > 1)).toBe(true);
  });

  it('per-process counts say so: MCP sessions and streams, provider calls and latency', async () => {
    const label = (id: string) => page.$eval(`#${id}`, (el) => el.parentElement!.querySelector('.stat-label')!.textContent);
    expect(await label('stat-mcp-sessions')).toBe('MCP sessions (this instance)');
    expect(await label('stat-mcp-streams')).toBe('MCP streams (this instance)');
    // Cluster-wide with the statistics on (the default): no such label.
    expect(await label('stat-requests')).toBe('Requests');
    await page.goto(`${gw.url}/console/#/providers`);
    await page.waitForSelector('[data-chart="provider-calls"]');
    expect(await page.textContent('[data-chart="provider-calls"] figcaption')).toBe(
      'Calls and failures by provider (this instance, since it started)',
    );
    expect(await page.textContent('[data-chart="provider-latency"] figcaption')).toBe(
      'Average latency by provider (this instance, since it started)',
    );
  });

  it('the Users page lists the most recent users before any search', async () => {
    await page.goto(`${gw.url}/console/#/users`);
    await page.waitForSelector('#user-status:not(:empty)');
    const listed = await page.$$eval('#user-results tbody tr td:first-child', (tds) => tds.map((td) => td.textContent));
    expect(listed).toEqual(expect.arrayContaining(['fhc-alice', 'fhc-bob']));
    expect(await page.textContent('#user-status')).toMatch(/^the \d+ most recent users\.$/);
    // A search still narrows it.
    await page.fill('#user-search', 'alice');
    await page.click('form[role="search"] button[type="submit"]');
    await page.waitForFunction(() => document.querySelectorAll('#user-results tbody tr').length === 1);
    expect(await page.textContent('#user-status')).toBe('1 user found.');
  });
});
