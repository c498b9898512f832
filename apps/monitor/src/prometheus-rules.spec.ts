import { execFileSync, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../../..');
const RULES = join(ROOT, 'infra/prometheus/alerts.yml');
const RULE_TESTS = join(ROOT, 'infra/prometheus/alerts.test.yml');
const DASHBOARD = join(ROOT, 'infra/grafana/herald-dashboard.json');
const promtool = spawnSync('sh', ['-c', 'command -v promtool'], { encoding: 'utf8' }).stdout.trim();

/** Every herald_* metric name the code registers (string literals 'herald_…' in libs and apps). */
function definedMetrics(): Set<string> {
  const names = new Set<string>();
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory() && entry.name !== 'node_modules') walk(path);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts')) {
        for (const m of readFileSync(path, 'utf8').matchAll(/'(herald_[a-z_]+)'/g)) names.add(m[1] as string);
      }
    }
  };
  walk(join(ROOT, 'libs'));
  walk(join(ROOT, 'apps'));
  return names;
}

/** herald_* names an expression file refers to, without histogram suffixes. */
const referenced = (text: string): string[] => [...new Set([...text.matchAll(/\bherald_[a-z_]*[a-z]\b/g)].map((m) => m[0].replace(/_(bucket|sum|count)$/, '')))];

describe('Prometheus rules and the Grafana dashboard', () => {
  it.skipIf(promtool === '')('promtool accepts the rules, and the rule tests pass (skipped when promtool is not installed)', () => {
    expect(execFileSync(promtool, ['check', 'rules', RULES], { encoding: 'utf8' })).toMatch(/SUCCESS: \d+ rules found/);
    expect(execFileSync(promtool, ['test', 'rules', RULE_TESTS], { encoding: 'utf8', cwd: join(ROOT, 'infra/prometheus') })).toMatch(/SUCCESS/);
    // promtool evaluates every rule at each 15 s step of each test's span: 8 simulated hours for a rule with a 6-hour baseline take it seconds.
  }, 60_000);

  it('refer only to metrics Herald registers', () => {
    const defined = definedMetrics();
    const used = [...referenced(readFileSync(RULES, 'utf8')), ...referenced(readFileSync(DASHBOARD, 'utf8'))];
    expect(used.length).toBeGreaterThan(10);
    expect(used.filter((name) => !defined.has(name))).toEqual([]);
  });

  it('the dashboard is valid JSON with a query on every panel', () => {
    const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: Array<{ type: string; title: string; targets?: Array<{ expr: string }> }> };
    const panels = dashboard.panels.filter((p) => p.type !== 'row');
    expect(panels.length).toBeGreaterThan(10);
    for (const p of panels) expect(p.targets?.length ?? 0, p.title).toBeGreaterThan(0);
  });
});
