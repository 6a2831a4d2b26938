// @every-node: CI runs this file on every Node version it tests (docs/testing.md, "CI: phases and times").
import { afterEach, describe, expect, it } from 'vitest';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { cp, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The built bin, as users run it (the root `test` script builds first). */
const BIN = fileURLToPath(new URL('../../packages/cli/bin/ai-backend.js', import.meta.url));
const children: ChildProcess[] = [];
const dirs: string[] = [];

afterEach(async () => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function tempDir() {
  const d = await mkdtemp(path.join(tmpdir(), 'ai-backend-cli-'));
  dirs.push(d);
  return d;
}

function run(args: string[], cwd: string, env: Record<string, string> = {}) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd, env: { PATH: process.env.PATH!, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Start `serve`, wait for the banner, return the base URL. */
function serve(args: string[], cwd: string, env: Record<string, string> = {}) {
  return new Promise<{ url: string; child: ChildProcess; banner: () => string }>((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, 'serve', ...args], { cwd, env: { PATH: process.env.PATH!, LOG_LEVEL: 'warn', ...env } });
    children.push(child);
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/[^\s]+)/.exec(out);
      if (m) resolve({ url: m[1]!, child, banner: () => out });
    });
    child.stderr.on('data', (d) => (err += d));
    child.on('exit', (code) => reject(new Error(`serve exited ${code}: ${err}`)));
  });
}

describe('ai-backend CLI', () => {
  it('serve --config --port starts, answers, and says OAuth is not configured', async () => {
    const dir = await tempDir();
    await writeFile(path.join(dir, 'ai-backend.config.json'), JSON.stringify({ storage: { type: 'memory' } }));
    const { url, banner } = await serve(['--config', 'ai-backend.config.json', '--port', '0'], dir);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    // authType 'oauth' (the default) governs the MCP tools on /rpc as on /mcp: a public tool answers, greeting needs a sign-in.
    const res = await fetch(url + '/rpc', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'system.test', params: { message: 'cli' } }),
    });
    expect(((await res.json()) as any).result.message).toBe('cli');
    const greeting = await fetch(url + '/rpc', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'mcp.greeting', params: { name: 'cli' } }),
    });
    expect(((await greeting.json()) as any).error.data.appCode).toBe('UNAUTHORIZED');
    expect(banner()).toContain('/trpc');
    expect(banner()).toContain('/mcp');
    expect(banner()).toMatch(/OAuth is the MCP auth type but is not configured/);
  });

  it('serve --dev: no auth, file store in the folder, read-only workspace on it', async () => {
    const dir = await tempDir();
    await writeFile(path.join(dir, 'hello.txt'), 'hi from the workspace');
    const { url, banner } = await serve(['--dev', '--port', '0'], dir);
    expect(banner()).toContain(`${url}/health`);
    const health = await fetch(url + '/health');
    expect(health.status).toBe(200);
    const call = await fetch(url + '/rpc', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'system.readFile', params: { workspaceId: 'default', path: 'hello.txt' } }),
    });
    expect(((await call.json()) as any).result.content).toBe('hi from the workspace');
    const write = await fetch(url + '/rpc', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 2,
        method: 'system.writeFile',
        params: { workspaceId: 'default', path: 'new.txt', content: 'x' },
      }),
    });
    expect(((await write.json()) as any).error.data.code).toBe('FORBIDDEN');
  });

  it('refuses a non-loopback unauthenticated serve with a clear message', async () => {
    const dir = await tempDir();
    const r = await run(['serve', '--host', '0.0.0.0', '--port', '0'], dir);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/refusing to serve without authentication/);
  });

  it('init writes a starter config and says to set JWT_SECRET first; check warns when nobody can sign in, reports problems with paths', async () => {
    const dir = await tempDir();
    const init = await run(['init'], dir);
    expect(init.code).toBe(0);
    // The starter's choices (the embedded store, the built-in providers) need no optional package
    // where Node ships node:sqlite (22.13+, 23.4+, 24+); on an older Node the store needs better-sqlite3.
    const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
    const shipsSqlite = major >= 24 || (major === 23 && minor >= 4) || (major === 22 && minor >= 13);
    if (shipsSqlite) expect(init.stdout).toContain('its choices need no package beyond ai-backend');
    else expect(init.stdout).toContain("its choices need: better-sqlite3 (storage.type: 'sqlite' on Node");
    expect(await readFile(path.join(dir, 'ai-backend.config.mjs'), 'utf8')).toContain('export default');
    expect((await run(['init'], dir)).code).toBe(1); // never overwrites
    // Nor writes a starter the search would use instead of another config already there.
    for (const [file, text] of [
      ['ai-backend.config.json', '{ "port": 9001 }'],
      ['package.json', '{ "name": "app", "ai-backend": { "port": 9001 } }'],
    ] as const) {
      const other = await tempDir();
      await writeFile(path.join(other, file), text);
      const refused = await run(['init'], other);
      expect(refused.code, file).toBe(1);
      expect(refused.stderr).toContain(
        `${path.join(other, file)} is already the config here (ai-backend uses it); not writing ai-backend.config.mjs`,
      );
      await expect(readFile(path.join(other, 'ai-backend.config.mjs'))).rejects.toThrow(/ENOENT/);
    }
    // Two configs in one folder (a leftover, a rename half done): check and serve say which is not used.
    const two = await tempDir();
    await writeFile(path.join(two, '.ai-backendrc.json'), '{ "storage": { "type": "memory" } }');
    await writeFile(path.join(two, 'ai-backend.config.yaml'), 'port: 9001\n');
    const passedOver = `warning: ${path.join(two, 'ai-backend.config.yaml')} is not used: ${path.join(two, '.ai-backendrc.json')} comes first in the search`;
    expect((await run(['config', 'check'], two)).stderr).toContain(passedOver);
    expect((await run(['serve', '--port', 'x'], two)).stderr).toContain(passedOver);
    expect((await run(['config', 'check', '--config', '.ai-backendrc.json'], two)).stderr).not.toContain('is not used');
    // The starter config signs callers in with JWTs: the next steps set the secret before checking.
    const steps = init.stdout.indexOf('echo "JWT_SECRET=$(openssl rand -hex 32)" >> .env');
    expect(steps).toBeGreaterThan(0);
    expect(steps).toBeLessThan(init.stdout.indexOf('npx ai-backend config check'));
    // Without it the config is valid but nobody could sign in: check says so, as serve does.
    const unset = await run(['config', 'check'], dir);
    expect(unset.code).toBe(0);
    expect(unset.stdout).toContain('config ok (1 warning)');
    expect(unset.stderr).toMatch(/^warning: mcp\.auth\.authType is 'jwt' but jwt\.secret is not set .*nobody can sign in/m);
    // The .env line the printed command writes (64 hex characters) passes without a warning.
    await writeFile(path.join(dir, '.env'), `JWT_SECRET=${'a1'.repeat(32)}\n`);
    const ok = await run(['config', 'check'], dir);
    expect(ok.stdout).toContain('config ok');
    expect(ok.stdout).not.toContain('warning');
    expect(ok.stderr).toBe('');
    expect(ok.code).toBe(0);

    await writeFile(path.join(dir, 'bad.json'), JSON.stringify({ oauth: { encryptionKey: 'short' }, bogus: true }));
    const bad = await run(['config', 'check', '--config', 'bad.json'], dir);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('oauth.encryptionKey: must be at least 32 characters');
    expect(bad.stderr).toContain('unknown key(s): bogus');
  });

  it('config problems in a JSON or YAML file name the file, line and column of the key (check and serve alike)', async () => {
    const dir = await tempDir();
    await writeFile(path.join(dir, 'bad.json'), '{\n  "port": 0,\n  "storage": {\n    "type": "sqlit"\n  }\n}\n');
    await writeFile(path.join(dir, 'bad.yaml'), 'port: 0\nmcp:\n  auth:\n    authType: nope\n');
    for (const args of [
      ['config', 'check', '--config'],
      ['serve', '--config'],
    ]) {
      const json = await run([...args, 'bad.json'], dir);
      expect(json.code).toBe(1);
      expect(json.stderr).toMatch(/^storage\.type: Invalid option.*\n {2}at .*bad\.json:4:5$/m);
      expect(json.stderr).not.toMatch(/\n\s+at .*\.js:\d+/); // no stack trace
      const yaml = await run([...args, 'bad.yaml'], dir);
      expect(yaml.code).toBe(1);
      expect(yaml.stderr).toMatch(/^mcp\.auth\.authType: Invalid option.*\n {2}at .*bad\.yaml:4:5$/m);
    }
    // A value from the environment names the variable, not a place in the file.
    const env = await run(['config', 'check', '--config', 'bad.yaml'], dir, { JWT_SECRET: 'short' });
    expect(env.stderr).toMatch(/^JWT_SECRET: must be at least 32 bytes$/m);
    // So does one from ./.env (where getting-started.md puts the secret), in every command that reads it.
    await writeFile(path.join(dir, '.env'), 'JWT_SECRET=short\n');
    for (const args of [
      ['config', 'check'],
      ['serve', '--port', '0'],
      ['token', '--sub', 'a'],
    ]) {
      const fromDotEnv = await run([...args, '--config', 'bad.yaml'], dir);
      expect(fromDotEnv.code, args.join(' ')).toBe(1);
      expect(fromDotEnv.stderr).toMatch(/^JWT_SECRET: must be at least 32 bytes$/m);
      expect(fromDotEnv.stderr).not.toMatch(/^jwt\.secret:/m);
    }
  });

  it('an unknown key names the key it most likely misspells, and its line in the file, at the root too', async () => {
    const dir = await tempDir();
    await writeFile(path.join(dir, 'typo.json'), '{\n  "prot": 0,\n  "storage": {\n    "typ": "memory"\n  }\n}\n');
    await writeFile(path.join(dir, 'typo.yaml'), 'mcp:\n  auth:\n    authtype: none\n');
    for (const args of [['config', 'check'], ['serve']]) {
      const json = await run([...args, '--config', 'typo.json'], dir);
      expect(json.code).toBe(1);
      expect(json.stderr).toMatch(/^\(root\): unknown key\(s\): prot \(did you mean port\?\)\n {2}at .*typo\.json:2:3$/m);
      expect(json.stderr).toMatch(/^storage: unknown key\(s\): typ \(did you mean type\?\)\n {2}at .*typo\.json:4:5$/m);
      const yaml = await run([...args, '--config', 'typo.yaml'], dir);
      expect(yaml.stderr).toMatch(/^mcp\.auth: unknown key\(s\): authtype \(did you mean authType\?\)\n {2}at .*typo\.yaml:3:5$/m);
    }
  });

  it('--version is the version in the manifest, which a release bumps (not a literal in the code)', async () => {
    // A copy of the built package whose manifest says 9.9.9, resolving its dependencies from the checkout's.
    const pkg = path.join(await tempDir(), 'ai-backend');
    const cli = path.dirname(path.dirname(BIN));
    for (const part of ['bin', 'dist']) await cp(path.join(cli, part), path.join(pkg, part), { recursive: true });
    const manifest = JSON.parse(await readFile(path.join(cli, 'package.json'), 'utf8')) as { version: string };
    await writeFile(path.join(pkg, 'package.json'), JSON.stringify({ ...manifest, version: '9.9.9' }));
    await symlink(path.join(cli, 'node_modules'), path.join(pkg, 'node_modules'), 'dir');
    expect((await run(['--version'], cli)).stdout.trim()).toBe(manifest.version);
    const copy = spawnSync(process.execPath, [path.join(pkg, 'bin', 'ai-backend.js'), '--version'], { encoding: 'utf8' });
    expect(copy.stdout.trim(), copy.stderr).toBe('9.9.9');
  });

  it('serve on a port in use: says which address is taken and how to choose another, exits 1, leaves no lock', async () => {
    const dir = await tempDir();
    const first = await serve(['--dev', '--port', '0'], dir);
    const port = new URL(first.url).port;
    // Another folder (another store), the same port: the listen is what fails.
    const other = await tempDir();
    const second = await run(['serve', '--dev', '--port', port], other);
    expect(second.code).toBe(1);
    expect(second.stderr).toContain(
      `ai-backend: 127.0.0.1:${port} is already in use (another ai-backend server, or another program): stop it, or choose another port with --port N`,
    );
    expect(second.stderr).not.toMatch(/EADDRINUSE|\n\s+at /);
    // A --port that is no whole number is refused as such, as PORT is (not read as 0, a random port).
    for (const bad of ['', 'abc', '80.5']) {
      const r = await run(['serve', '--dev', '--port', bad], other);
      expect(r.code, bad).toBe(1);
      expect(r.stderr).toBe(`--port: must be a port number (0-65535; 0 picks a free one), got "${bad}"\n`);
    }
    // Its store was closed on the way out: the next serve in that folder opens it.
    const third = await serve(['--dev', '--port', '0'], other);
    expect((await fetch(`${third.url}/health`)).status).toBe(200);
  });

  it('config print redacts secrets; token mints a JWT from the configured secret', async () => {
    const dir = await tempDir();
    const secret = 'q'.repeat(40);
    await writeFile(
      path.join(dir, '.ai-backendrc.json'),
      JSON.stringify({ ai: { providers: { openai: { baseUrl: 'https://u:URLPASS-SECRET@proxy.example/v1?key=URLKEY-SECRET' } } } }),
    );
    const printed = await run(['config', 'print'], dir, { JWT_SECRET: secret });
    expect(printed.code).toBe(0);
    expect(printed.stdout).not.toContain(secret);
    expect(printed.stdout).not.toContain('URLPASS-SECRET');
    expect(printed.stdout).not.toContain('URLKEY-SECRET');
    expect(JSON.parse(printed.stdout).jwt.secret).toBe('[redacted]');
    const tok = await run(['token', '--sub', 'alice', '--scope', 'mcp', 'mcp:admin'], dir, { JWT_SECRET: secret });
    expect(tok.code).toBe(0);
    const payload = JSON.parse(Buffer.from(tok.stdout.trim().split('.')[1]!, 'base64url').toString());
    expect(payload).toMatchObject({ sub: 'alice', scopes: ['mcp', 'mcp:admin'] });
    const week = await run(['token', '--sub', 'alice', '--expires-in', '7 days'], dir, { JWT_SECRET: secret });
    const claims = JSON.parse(Buffer.from(week.stdout.trim().split('.')[1]!, 'base64url').toString());
    expect(claims.exp - claims.iat).toBe(7 * 24 * 3600);
    // A lifetime jose cannot read, or one that mints a token already expired: refused saying what is wanted.
    for (const bad of ['1x', '-1h', '2h ago']) {
      const r = await run(['token', '--sub', 'alice', '--expires-in', bad], dir, { JWT_SECRET: secret });
      expect(r.code, bad).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr).toBe(`--expires-in: must be a lifetime such as 30m, 1h or 7d (a number, then s, m, h, d or w), got "${bad}"\n`);
    }
  });

  it('config print redacts what upstream MCP servers and key=value connection strings carry (env, secret args, passwords)', async () => {
    const dir = await tempDir();
    const ref = (name: string) => `\${${name}}`;
    await writeFile(
      path.join(dir, '.ai-backendrc.json'),
      JSON.stringify({
        storage: { type: 'postgres', postgres: { connectionString: "host=db user=app password='KV-PASS SECRET' dbname=x" } },
        mcpServers: {
          // A pasted .mcp.json: the credentials come from the environment through ${VAR}.
          github: {
            command: 'npx',
            args: ['-y', 'server-github'],
            env: { GITHUB_PERSONAL_ACCESS_TOKEN: ref('GH_PAT'), GH_HOST: 'gh.example' },
          },
          remote: {
            command: 'npx',
            args: [
              'mcp-remote',
              'https://mcp.example/mcp',
              '--header',
              `Authorization: Bearer ${ref('UPSTREAM_TOKEN')}`,
              '--api-key',
              'ARGKEY-SECRET',
              '--password=ARGPW-SECRET',
            ],
          },
        },
      }),
    );
    const printed = await run(['config', 'print'], dir, { GH_PAT: 'GHPAT-SECRET', UPSTREAM_TOKEN: 'BEARER-SECRET' });
    expect(printed.code).toBe(0);
    for (const secret of ['GHPAT-SECRET', 'BEARER-SECRET', 'ARGKEY-SECRET', 'ARGPW-SECRET', 'KV-PASS', 'gh.example'])
      expect(printed.stdout).not.toContain(secret);
    // What is not a secret stays readable: the command, its plain arguments, the variable names, the flags.
    const out = JSON.parse(printed.stdout);
    expect(out.mcpServers.github).toMatchObject({ command: 'npx', args: ['-y', 'server-github'] });
    expect(Object.keys(out.mcpServers.github.env)).toEqual(['GITHUB_PERSONAL_ACCESS_TOKEN', 'GH_HOST']);
    expect(out.mcpServers.remote.args).toEqual([
      'mcp-remote',
      'https://mcp.example/mcp',
      '--header',
      'Authorization: [redacted]',
      '--api-key',
      '[redacted]',
      '--password=[redacted]',
    ]);
    expect(out.storage.postgres.connectionString).toBe('host=db user=app password=[redacted] dbname=x');
  });
});
