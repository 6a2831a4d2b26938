/**
 * The MCP Inspector CLI (@modelcontextprotocol/inspector 0.15.0, the version npm picks on
 * Node 20; it needs `--transport http` for Streamable HTTP) against our server.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './helpers/testServer.js';

const CLI = fileURLToPath(new URL('../../node_modules/@modelcontextprotocol/inspector/cli/build/cli.js', import.meta.url));

function inspector(url: string, args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, '--cli', url, '--transport', 'http', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out, err });
    });
  });
}

describe('MCP Inspector CLI', () => {
  let defaults: TestServer;
  let open: TestServer;
  beforeAll(async () => {
    // The default config (OAuth auth type, tools/list public, tools/call needs a token).
    defaults = await startTestServer();
    open = await startTestServer({ mcp: { auth: { authType: 'none' } } });
  });
  afterAll(async () => {
    await defaults?.stop();
    await open?.stop();
  });

  it('tools/list against the default server', async () => {
    const r = await inspector(`${defaults.url}/mcp`, ['--method', 'tools/list']);
    expect(r.code, r.err).toBe(0);
    const names = (JSON.parse(r.out) as { tools: Array<{ name: string; annotations?: object }> }).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['greeting', 'ping', 'echo', 'currentSystemTime', 'listClientWorkspaces']));
  });

  it('tools/call without a token on the default server is refused (401 challenge)', async () => {
    const r = await inspector(`${defaults.url}/mcp`, ['--method', 'tools/call', '--tool-name', 'greeting', '--tool-arg', 'name=Ada']);
    expect(r.code).not.toBe(0);
    expect(r.out + r.err).toMatch(/401|[Uu]nauthori[sz]ed|authentication/);
  });

  it('tools/call, prompts/list and prompts/get with authType none', async () => {
    const call = await inspector(`${open.url}/mcp`, [
      '--method',
      'tools/call',
      '--tool-name',
      'greeting',
      '--tool-arg',
      'name=Ada',
      '--tool-arg',
      'language=de',
    ]);
    expect(call.code, call.err).toBe(0);
    expect(JSON.parse(JSON.parse(call.out).content[0].text)).toEqual({ greeting: 'Hallo, Ada!', language: 'de' });

    const prompts = await inspector(`${open.url}/mcp`, ['--method', 'prompts/list']);
    expect(prompts.code, prompts.err).toBe(0);
    expect(JSON.parse(prompts.out).prompts.map((p: { name: string }) => p.name)).toContain('codeReviewPrompt');

    const get = await inspector(`${open.url}/mcp`, [
      '--method',
      'prompts/get',
      '--prompt-name',
      'codeReviewPrompt',
      '--prompt-args',
      'code=x=1',
      'language=python',
    ]);
    expect(get.code, get.err).toBe(0);
    expect(JSON.parse(get.out).messages[0].content.text).toMatch(/Review the following python code/);
  });
});
