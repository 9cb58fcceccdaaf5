#!/usr/bin/env node
// The `kcp-ts` command: runs the compiled CLI (`npm run build` creates dist/).
import '../dist/cli/bin.js';
