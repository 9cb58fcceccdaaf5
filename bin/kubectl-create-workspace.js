#!/usr/bin/env node
// The `kubectl-create-workspace` command (kubectl finds it on PATH as `kubectl create workspace`):
// runs the compiled plugin (`npm run build` creates dist/).
import '../dist/cli/ws/create-workspace-bin.js';
