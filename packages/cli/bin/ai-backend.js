#!/usr/bin/env node
// A committed entry so package managers can link the bin before the first build has run.
import '../dist/bin.js';
