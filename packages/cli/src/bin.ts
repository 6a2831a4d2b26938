import { Command } from 'commander';
import { ConfigError } from '@ai-backend/core';
import { packageVersion } from '@ai-backend/core/internal';
import { configProblemLines } from './configProblemLines.js';
import { configCheck, configPrint, init } from './commands/configCommands.js';
import { serve } from './commands/serve.js';
import { token } from './commands/token.js';

const program = new Command('ai-backend')
  .description('AI backend: one set of procedures over tRPC, JSON-RPC and MCP')
  .version(packageVersion(import.meta.url, 'ai-backend'));

const exit = (code: number) => {
  process.exitCode = code;
};

program
  .command('serve')
  .description('start the HTTP server')
  .option('-c, --config <file>', 'config file (ts, mjs, js, json, yaml)')
  .option('-p, --port <port>', 'port (0 picks a free one)')
  .option('-H, --host <host>', 'bind address (default 127.0.0.1)')
  .option('--dev', 'first run: loopback, no auth, SQLite store in ./.ai-backend-data, read-only workspace on this folder')
  .action(serve);

program
  .command('init')
  .description('write a commented starter config')
  .argument('[file]', 'file to write', 'ai-backend.config.mjs')
  .action(async (file: string) => exit(await init({ file })));

const config = program.command('config').description('inspect the configuration');
config
  .command('check')
  .option('-c, --config <file>', 'config file')
  .description('validate; print each problem with its path')
  .action(async (o) => exit(await configCheck(o)));
config
  .command('print')
  .option('-c, --config <file>', 'config file')
  .description('print the resolved config, secrets redacted')
  .action(async (o) => exit(await configPrint(o)));

program
  .command('token')
  .description('mint a development JWT signed with jwt.secret')
  .option('-c, --config <file>', 'config file')
  .requiredOption('--sub <sub>', 'subject (user id)')
  .option('--email <email>', 'email claim')
  .option('--scope <scope...>', 'scopes, e.g. mcp mcp:call mcp:admin', [])
  .option('--expires-in <span>', 'lifetime, e.g. 1h, 7d', '1h')
  .action(async (o) => exit(await token(o)));

program.parseAsync().catch((err: unknown) => {
  if (err instanceof ConfigError) {
    process.stderr.write(configProblemLines(err.problems, null).join('\n') + '\n');
  } else {
    process.stderr.write(`ai-backend: ${err instanceof Error ? err.message : String(err)}\n`);
  }
  process.exit(1);
});
