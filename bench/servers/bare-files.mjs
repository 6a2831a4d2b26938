// The file baseline: the same listing and the same file served by Node's fs behind a bare Hono
// route, with no workspace guard, no tRPC and no JSON-RPC dispatch. argv[2]: {"treeRoot","file"}.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { Hono } from 'hono';
import { serve } from '@hono/node-server';

const { treeRoot, file } = JSON.parse(process.argv[2]);
const app = new Hono();

// Everything below the root, relative, folders with a trailing '/', depth first and sorted by
// name: what listFiles answers, by a plain walk (one readdir per folder, no checks). Node 20's
// readdir({ recursive: true }) is slower than this walk, so it would flatter the comparison.
async function walk(dir, rel, out) {
  const entries = await readdir(dir, { withFileTypes: true });
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const e of entries) {
    const r = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) {
      out.push(r + '/');
      await walk(path.join(dir, e.name), r, out);
    } else if (e.isFile()) out.push(r);
  }
  return out;
}

app.post('/list', async (c) => c.json({ jsonrpc: '2.0', id: 1, result: await walk(treeRoot, '', []) }));

app.post('/read', async (c) => {
  const { encoding = 'utf8' } = await c.req.json();
  const data = await readFile(file);
  return c.json({
    jsonrpc: '2.0',
    id: 1,
    result: { content: data.toString(encoding), size: data.length, encoding, mimeType: 'text/plain' },
  });
});

serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => {
  process.stdout.write(JSON.stringify({ url: `http://127.0.0.1:${info.port}` }) + '\n');
});
