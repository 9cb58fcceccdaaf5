#!/usr/bin/env node
// The `kubectl-ws` command (kubectl finds it on PATH as `kubectl ws`): runs the compiled plugin
// (`npm run build` creates dist/).
import '../dist/cli/ws/bin.js';
