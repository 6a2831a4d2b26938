#!/usr/bin/env node
// A committed entry so package managers can link the bin before the first build has run.
import module from 'node:module';

// Node 22.1+: keep V8's compiled code of our modules on disk (node's default cache folder, or
// NODE_COMPILE_CACHE; NODE_DISABLE_COMPILE_CACHE=1 turns it off), so every later start skips
// most of the compiling: about 15% less start-up CPU on Node 24 (docs/performance.md). Older
// Node versions have no such function and start as before.
module.enableCompileCache?.();
await import('../dist/bin.js');
