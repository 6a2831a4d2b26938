// @every-node: CI runs this file on every Node version it tests (docs/testing.md, "CI: phases and times").
/**
 * docs/getting-started.md "Make it yours", run as written with the built CLI (`npx ai-backend` →
 * the repository's bin; PORT=0 in the environment so the starter config's port 8000 may be taken):
 * init, a secret in .env, config check, serve, token, and the token works against that server.
 * Also: the starter workspace does not expose .env* or the data folder, and config files with
 * syntax errors are reported with file, line and column.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = path.join(ROOT, 'packages/cli/bin/ai-backend.js');
const children: ChildProcess[] = [];
const dirs: string[] = [];
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});
const tempDir = async () => {
  const d = await mkdtemp(path.join(tmpdir(), 'ai-backend-start-'));
  dirs.push(d);
  return d;
};
const env = { PATH: process.env.PATH!, PORT: '0', LOG_LEVEL: 'warn' };

async function docBlock(): Promise<string[]> {
  const doc = await readFile(path.join(ROOT, 'docs/getting-started.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## Make it yours'));
  const block = /```sh\n([\s\S]*?)```/.exec(section)![1]!;
  return block.split('\n').filter((l) => l.trim() && !l.trim().startsWith('#'));
}

async function rpc(url: string, method: string, params: unknown, token?: string) {
  const res = await fetch(`${url}/rpc`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return (await res.json()) as { result?: any; error?: { code: number; message: string } };
}

describe('getting started, as written', () => {
  let dir: string;
  let url: string;
  let token: string;
  let banner = '';

  beforeAll(async () => {
    dir = await tempDir();
    await writeFile(path.join(dir, '.env.local'), 'SECRET_IN_ENV_LOCAL=1');
    await writeFile(path.join(dir, 'notes.txt'), 'hello');
    const lines = await docBlock();
    expect(lines.some((l) => /JWT_SECRET=.*serve/.test(l))).toBe(false); // no inline secret for serve only
    for (const line of lines) {
      const cmd = line.replaceAll('npx ai-backend', `node ${JSON.stringify(BIN)}`);
      if (cmd.trim().endsWith('&')) {
        const child = spawn('sh', ['-c', `exec ${cmd.trim().slice(0, -1)}`], { cwd: dir, env });
        children.push(child);
        url = await new Promise<string>((resolve, reject) => {
          child.stdout.on('data', (d) => {
            banner += d;
            const m = /listening on (http:\/\/\S+)/.exec(banner);
            if (m) resolve(m[1]!);
          });
          child.once('exit', (code) => reject(new Error(`${line} exited ${code}`)));
        });
      } else {
        const out = execFileSync('sh', ['-c', cmd], { cwd: dir, env, encoding: 'utf8' });
        if (line.includes(' token ')) token = out.trim();
      }
    }
  }, 120_000);

  it('the token minted after serve started is accepted by that server; no token is refused', async () => {
    expect(token.split('.')).toHaveLength(3);
    const listed = await rpc(url, 'system.listFiles', { workspaceId: 'project', path: '' }, token);
    expect(listed.error).toBeUndefined();
    expect(JSON.stringify(listed.result)).toContain('notes.txt');
    expect((await rpc(url, 'system.listFiles', { workspaceId: 'project', path: '' })).error).toBeDefined();
  });

  it('the starter config publishes MCP resources without code: the README and the project files template', async () => {
    const listed = await rpc(url, 'mcp.getResources', {}, token);
    expect(listed.result.resources).toContain('workspace://project/README.md');
    expect(listed.result.total).toBeGreaterThan(0);
    const notes = await rpc(url, 'mcp.readResource', { uri: 'workspace://project/notes.txt' }, token);
    expect(notes.result).toMatchObject({ content: 'hello', mimeType: 'text/plain' });
    // The same workspace rules: .env files stay hidden through resources too.
    const env = await rpc(url, 'mcp.readResource', { uri: 'workspace://project/.env.local' }, token);
    expect(env.error).toBeDefined();
    expect(JSON.stringify(env)).not.toContain('SECRET_IN_ENV_LOCAL');
  });

  it("the starter workspace does not expose .env files or the server's data folder", async () => {
    const listed = JSON.stringify(
      (await rpc(url, 'system.listFiles', { workspaceId: 'project', path: '', recursive: true }, token)).result,
    );
    expect(listed).not.toContain('.env');
    expect(listed).not.toContain('.ai-backend-data');
    for (const p of ['.env', '.env.local', '.ai-backend-data']) {
      const read = await rpc(url, 'system.readFile', { workspaceId: 'project', path: p }, token);
      expect(read.error, p).toBeDefined();
      expect(JSON.stringify(read)).not.toContain('JWT_SECRET');
    }
  });
});

/** `config check` in `dir`: its exit code and stderr. */
const check = (dir: string, args: string[] = []) => {
  const r = spawnSync(process.execPath, [BIN, 'config', 'check', ...args], { cwd: dir, env, encoding: 'utf8' });
  return { code: r.status, stderr: r.stderr };
};

describe('config files that do not parse', () => {
  it('an .mjs config with a syntax error: file, line and column', async () => {
    const dir = await tempDir();
    await writeFile(path.join(dir, 'ai-backend.config.mjs'), 'export default {\n  port: 8000,\n  host: "x" +,\n};\n');
    const r = check(dir);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`${path.join(dir, 'ai-backend.config.mjs')}:3:14: SyntaxError: Unexpected token ','`);
    expect(r.stderr).not.toMatch(/bug in Node\.js|Cannot require\(\)/);
  });

  it('a .json config with a syntax error: file, line and column', async () => {
    const dir = await tempDir();
    await writeFile(path.join(dir, 'bad.json'), '{\n  "port": 8000,\n  "host": \n}\n');
    const r = check(dir, ['--config', 'bad.json']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`${path.join(dir, 'bad.json')}:4:1: invalid JSON: ValueExpected`);
  });

  it('a YAML config with a syntax error: file, line and column, and none of its lines (they may hold a secret)', async () => {
    const dir = await tempDir();
    const secret = 'YAML-SECRET-'.padEnd(40, 'x');
    for (const file of ['ai-backend.config.yaml', '.ai-backendrc']) {
      await writeFile(path.join(dir, file), `jwt:\n  secret: ${secret}\nport: 8000\nhost: [\n`);
      const r = check(dir, ['--config', file]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`${path.join(dir, file)}:5:1: invalid YAML: unexpected end of the stream within a flow collection`);
      expect(r.stderr).not.toContain('YAML-SECRET');
      expect(r.stderr).not.toContain('port: 8000');
    }
    // Found by the search too (no --config), and a duplicated key (a semantic YAML error) alike.
    await rm(path.join(dir, '.ai-backendrc'));
    await writeFile(path.join(dir, 'ai-backend.config.yaml'), `jwt:\n  secret: ${secret}\njwt: {}\n`);
    const found = check(dir);
    expect(found.code).toBe(1);
    expect(found.stderr).toContain(`${path.join(dir, 'ai-backend.config.yaml')}:3:1: invalid YAML: duplicated mapping key`);
    expect(found.stderr).not.toContain('YAML-SECRET');
  });
});

describe('config files that parse but hold no settings: refused, never read as the defaults', () => {
  it.each([
    [
      'named.mjs',
      'export const config = { port: 9000 };\n',
      'the config must be the default export (export default { ... }); the file exports only config',
    ],
    [
      'factory.mjs',
      'export default () => ({ port: 9000 });\n',
      'the config must be an object of settings ({ port: 8000, ... }), not a function',
    ],
    ['list.json', '[{ "port": 9000 }]\n', 'the config must be an object of settings ({ port: 8000, ... }), not an array'],
    ['port.yaml', '9000\n', 'the config must be an object of settings ({ port: 8000, ... }), not the number 9000'],
  ])('%s', async (file, text, reason) => {
    const dir = await tempDir();
    await writeFile(path.join(dir, file), text);
    const r = check(dir, ['--config', file]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`ai-backend: ${path.join(dir, file)}: ${reason}\n`);
  });

  it('ai-backend.config.yml and .cjs are found as .yaml and .mjs are', async () => {
    for (const [file, text] of [
      ['ai-backend.config.yml', 'prot: 9000\n'],
      ['ai-backend.config.cjs', 'module.exports = { prot: 9000 };\n'],
    ] as const) {
      const dir = await tempDir();
      await writeFile(path.join(dir, file), text);
      const r = check(dir, ['--config', file]);
      expect(r.code, file).toBe(1);
      expect(r.stderr).toContain('unknown key(s): prot (did you mean port?)');
      const searched = check(dir);
      expect(searched.stderr, `${file} was not found by the search`).toContain('unknown key(s): prot (did you mean port?)');
    }
  });
});

it('the banner sample in getting-started.md is what `serve --dev` prints', async () => {
  const dir = await tempDir();
  const child = spawn(process.execPath, [BIN, 'serve', '--dev'], { cwd: dir, env });
  children.push(child);
  let out = '';
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (d) => {
      out += d;
      if (/mcp:admin\n/.test(out)) resolve();
    });
    child.once('exit', (code) => reject(new Error(`serve --dev exited ${code}: ${out}`)));
  });
  // The banner as printed before the stop (the stop message would follow it).
  const banner = out;
  child.kill('SIGTERM');
  const doc = await readFile(path.join(ROOT, 'docs/getting-started.md'), 'utf8');
  const sample = /```\n(ai-backend listening[\s\S]*?)```/.exec(doc)![1]!.trim();
  const port = /127\.0\.0\.1:(\d+)/.exec(banner)![1]!;
  // The console link's sign-in code is random per process.
  expect(banner).toMatch(/\/console\/#dev=[\w-]{43} {2}/);
  const printed = banner
    .trim()
    .replaceAll(`127.0.0.1:${port}`, '127.0.0.1:8000')
    .replace(dir, '/path/to/your/folder')
    .replace(/#dev=[\w-]+/, '#dev=<one-time code>');
  expect(printed).toBe(sample);
});
