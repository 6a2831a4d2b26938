// Preloaded with `--import` by bench/coldPath.mjs: appends the URL of every module the process
// loads, ES modules (a load hook) and CommonJS files (Module.prototype._compile), to the file named
// by AIB_MODULE_LOG, so the bench can tell which modules a server loads on its first calls.
import { appendFileSync } from 'node:fs';
import Module, { register } from 'node:module';
import { pathToFileURL } from 'node:url';

const file = process.env.AIB_MODULE_LOG;
if (file) {
  register(
    `data:text/javascript,${encodeURIComponent(`import { appendFileSync } from 'node:fs';
export async function load(url, context, next) {
  if (!url.startsWith('node:') && !url.startsWith('data:')) appendFileSync(${JSON.stringify(file)}, url + '\\n');
  return next(url, context);
}`)}`,
  );
  const compile = Module.prototype._compile;
  Module.prototype._compile = function (content, filename) {
    appendFileSync(file, `${pathToFileURL(filename).href}\n`);
    return compile.call(this, content, filename);
  };
}
