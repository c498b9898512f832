#!/usr/bin/env node
// The `herald` command: runs the TypeScript CLI through tsx, no build step.
import { register } from 'tsx/esm/api';

register();
await import('../src/main.ts');
