#!/usr/bin/env node
// `npm test`: every Vitest project (unit, integration, e2e), then one plain summary line
// `N passed, N failed` computed from Vitest's JSON report, which CI reads.
// Extra arguments go to Vitest, e.g. `npm test -- --project unit`.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const reportDir = join(process.cwd(), 'test-results');
const report = join(reportDir, 'vitest.json');
mkdirSync(reportDir, { recursive: true });
rmSync(report, { force: true });

const run = spawnSync(
  process.execPath,
  ['node_modules/vitest/vitest.mjs', 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`, ...process.argv.slice(2)],
  { stdio: 'inherit' },
);

let passed = 0;
let failed = 0;
let skipped = 0;
try {
  const results = JSON.parse(readFileSync(report, 'utf8'));
  passed = results.numPassedTests ?? 0;
  // Failed tests, plus each file that failed without a failed test (an error in a hook or at import).
  const fileErrors = (results.testResults ?? []).filter(
    (f) => f.status === 'failed' && !(f.assertionResults ?? []).some((a) => a.status === 'failed'),
  ).length;
  failed = (results.numFailedTests ?? 0) + fileErrors;
  skipped = (results.numPendingTests ?? 0) + (results.numTodoTests ?? 0);
} catch {
  failed += 1; // no report means Vitest itself failed to run
}
if (run.status !== 0 && failed === 0) failed = 1;
console.log(`${passed} passed, ${failed} failed${skipped > 0 ? `, ${skipped} skipped` : ''}`);
process.exit(failed > 0 ? 1 : 0);
