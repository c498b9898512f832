import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AlarmKinds } from '@herald/monitoring';
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';

const ROOT = join(import.meta.dirname, '../../..');
const RULES = join(ROOT, 'infra/prometheus/alerts.yml');
const RULE_TESTS = join(ROOT, 'infra/prometheus/alerts.test.yml');
const DASHBOARD = join(ROOT, 'infra/grafana/herald-dashboard.json');
const ALERTMANAGER = join(ROOT, 'infra/prometheus/alertmanager.example.yml');
const RUNBOOK = join(ROOT, 'docs/runbook.md');
const installed = (tool: string): string => spawnSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).stdout.trim();
const promtool = installed('promtool');
const amtool = installed('amtool');

interface Rule {
  alert: string;
  expr: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
const rules = (): Rule[] => (parse(readFileSync(RULES, 'utf8')) as { groups: Array<{ rules: Rule[] }> }).groups.flatMap((g) => g.rules);

/** The anchors a Markdown renderer (GitHub's) gives headings: lower case, punctuation but - and _ dropped, spaces to -. */
const anchorsOf = (markdown: string): Set<string> =>
  new Set([...markdown.matchAll(/^#{1,6} (.+)$/gm)].map((m) => (m[1] as string).trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replace(/ /g, '-')));

/** Whether a rule's expression selects herald_alarm_active series of this alarm kind (its alarm matchers, regexes anchored as PromQL's). */
const selectsAlarm = (expr: string, kind: string): boolean =>
  expr.includes('herald_alarm_active') &&
  [...expr.matchAll(/\balarm\s*(=~|!~|!=|=)\s*"([^"]*)"/g)].every(([, op, value]) => {
    const hit = op === '=' || op === '!=' ? kind === value : new RegExp(`^(?:${value})$`).test(kind);
    return op === '=' || op === '=~' ? hit : !hit;
  });

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

/** The filter the herald-queues rules put after each herald_queue_* and herald_alarm_active selector (but HeraldParkedGrowing's delta), and the dashboard after each: a blind replica's series left out while another of its namespace sees, both over a minute. */
const BLIND_WHILE_ANOTHER_SEES = '(herald_monitor_blind == 1 and on (namespace) count by (namespace) (herald_monitor_blind == 0)) or (min_over_time(herald_monitor_blind[1m]) == 1 and on (namespace) count by (namespace) (min_over_time(herald_monitor_blind[1m]) == 0 and on (namespace, pod, instance) herald_monitor_blind))';
const LEAVE_OUT_BLIND = `unless on (namespace, pod, instance) (${BLIND_WHILE_ANOTHER_SEES})`;

interface Dashboard {
  panels: Array<{ type: string; title: string; targets?: Array<{ expr: string }> }>;
}
const dashboard = (): Dashboard => JSON.parse(readFileSync(DASHBOARD, 'utf8')) as Dashboard;
/** The query of the dashboard panel so titled (its only one). */
const panelExpr = (title: string): string => {
  const targets = dashboard().panels.find((p) => p.title === title)?.targets ?? [];
  expect(targets.length, title).toBe(1);
  return (targets[0] as { expr: string }).expr;
};

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

  it('give every rule a runbook_url to its section of docs/runbook.md, which has one for every monitor alarm too', () => {
    const runbook = readFileSync(RUNBOOK, 'utf8');
    const sections = anchorsOf(runbook);
    const missing: string[] = [];
    for (const rule of rules()) {
      if (!sections.has(rule.alert.toLowerCase())) missing.push(`${rule.alert}: no section`);
      const url = rule.annotations?.runbook_url ?? '';
      const anchor = /^docs\/runbook\.md#(.+)$/.exec(url)?.[1];
      if (anchor === undefined) {
        missing.push(`${rule.alert}: runbook_url "${url}"`);
        continue;
      }
      // HeraldMonitorAlarm points to the section of the alarm it carries.
      const anchors = anchor.includes('{{ $labels.alarm }}') ? AlarmKinds.filter((k) => selectsAlarm(rule.expr, k)).map((k) => anchor.replace('{{ $labels.alarm }}', k)) : [anchor];
      for (const a of anchors) if (!sections.has(a)) missing.push(`${rule.alert}: #${a}`);
    }
    for (const kind of AlarmKinds) if (!sections.has(`monitor-alarm-${kind}`)) missing.push(`monitor alarm ${kind}: no section`);
    // The runbook's own links between sections.
    for (const [, a] of runbook.matchAll(/\]\(#([^)]+)\)/g)) if (!sections.has(a as string)) missing.push(`link #${a}`);
    expect(missing).toEqual([]);
  });

  it("alert on each monitor alarm once, at the severity of what it costs users (RabbitMQ's resource alarm is HeraldRabbitResourceAlarm's)", () => {
    const monitorAlarms = rules().filter((r) => r.alert === 'HeraldMonitorAlarm');
    const severities = Object.fromEntries(AlarmKinds.map((kind) => [kind, monitorAlarms.filter((r) => selectsAlarm(r.expr, kind)).map((r) => r.labels?.severity)]));
    expect(severities).toEqual({
      backlog: ['warning'],
      'no-consumer': ['critical'],
      'drain-time': ['warning'],
      stalled: ['critical'],
      'parked-growing': ['warning'],
      'queue-missing': ['critical'],
      'rabbitmq-unreachable': ['critical'],
      'scheduled-overdue': ['critical'],
      'database-unreachable': ['warning'],
      'apns-certificate-expiring': ['warning'],
      'apns-certificate-expired': ['critical'],
      'rabbitmq-resource-alarm': [],
      'oldest-message': ['warning'],
      'rabbitmq-node-down': ['warning'],
      'rabbitmq-partition': ['critical'],
      'provider-down': ['critical'],
    });
  });

  // A replica whose polls of the management API fail keeps its last view (queue-monitor.ts onFailure):
  // max over replicas would keep paging what the seeing one cleared, and the blind one's own rabbitmq-unreachable.
  it("leave out a blind monitor replica's queue gauges and alarms while another in its namespace sees, which HeraldMonitorBlind says", () => {
    const flat = (expr: string): string => expr.replace(/\s+/g, ' ').trim();
    expect(rules().filter((r) => r.alert === 'HeraldMonitorBlind').map((r) => flat(r.expr))).toEqual([BLIND_WHILE_ANOTHER_SEES]);
    const readers = rules().filter((r) => /\bherald_(queue_[a-z_]+|alarm_active)\b/.test(r.expr));
    expect(readers.length).toBeGreaterThan(5);
    // HeraldParkedGrowing's delta spans five minutes: a replica blind in any of them is left out.
    const overItsDelta = 'max_over_time(herald_monitor_blind[5m]) == 1 and on (namespace) count by (namespace) (max_over_time(herald_monitor_blind[5m]) == 0 and on (namespace, pod, instance) herald_monitor_blind)';
    const filter = (r: { alert?: string }): string => (r.alert === 'HeraldParkedGrowing' ? `unless on (namespace, pod, instance) (${overItsDelta})` : LEAVE_OUT_BLIND);
    const unfiltered = readers.filter((r) => !flat(r.expr).includes(filter(r)));
    expect(unfiltered.map((r) => r.alert)).toEqual([]);
  });

  it("leave out, on the dashboard too, a blind monitor replica's queue gauges and alarms while another in its namespace sees: every such selector", () => {
    const selectors = dashboard().panels.flatMap((p) => (p.targets ?? []).flatMap((t) => [...t.expr.matchAll(/\bherald_(?:queue_[a-z_]+|alarm_active)\b(?:\{[^}]*\})?/g)].map((m) => ({ p, after: t.expr.slice((m.index ?? 0) + m[0].length) }))));
    expect(selectors.length).toBeGreaterThan(10);
    expect(selectors.filter((s) => !s.after.startsWith(` ${LEAVE_OUT_BLIND}`)).map((s) => s.p.title)).toEqual([]);
  });

  // What the filter does in the panels' own queries: replica a cut off from the management API
  // with a stale no-consumer alarm and depth, b seeing the queue drained; then both blind.
  it.skipIf(promtool === '')("show on the dashboard the seeing replica's view, and the last views when none sees (promtool evaluates the panels' queries; skipped when promtool is not installed)", () => {
    const replica = (pod: string, ip: string) => `job="herald-monitor",namespace="herald",instance="${ip}:9470",pod="herald-monitor-${pod}"`;
    const [a, b] = [replica('a', '10.0.0.11'), replica('b', '10.0.0.12')];
    const queue = 'queue="push.apns.send"';
    const seriesOf = (bBlind: number) => [
      { series: `herald_monitor_blind{${a}}`, values: '1x10' },
      { series: `herald_monitor_blind{${b}}`, values: `${bBlind}x10` },
      { series: `herald_alarm_active{${a},alarm="no-consumer",${queue}}`, values: '1x10' },
      { series: `herald_alarm_active{${b},alarm="no-consumer",${queue}}`, values: '0x10' },
      { series: `herald_queue_messages{${a},${queue},kind="work"}`, values: '500x10' },
      { series: `herald_queue_messages{${b},${queue},kind="work"}`, values: '0x10' },
      { series: `herald_queue_consumers{${a},${queue},kind="work"}`, values: '0x10' },
      { series: `herald_queue_consumers{${b},${queue},kind="work"}`, values: '2x10' },
    ];
    const at = (expr: string, exp_samples: Array<{ labels: string; value: number }>) => ({ expr, eval_time: '5m', exp_samples });
    const [firing, firingNow, depth, consumers] = ['Alarms firing', 'Alarms firing now', 'Queue depth (work queues)', 'Consumers'].map(panelExpr) as [string, string, string, string];
    const tests = {
      rule_files: [],
      evaluation_interval: '1m',
      tests: [
        {
          interval: '1m',
          input_series: seriesOf(0),
          promql_expr_test: [
            at(firing, [{ labels: '{}', value: 0 }]),
            at(firingNow, []),
            at(depth, [{ labels: `{${queue}}`, value: 0 }]),
            at(consumers, [{ labels: `{${queue}}`, value: 2 }]),
          ],
        },
        {
          interval: '1m',
          input_series: seriesOf(1),
          promql_expr_test: [
            at(firing, [{ labels: '{}', value: 1 }]),
            at(firingNow, [{ labels: `{alarm="no-consumer",${queue}}`, value: 1 }]),
            at(depth, [{ labels: `{${queue}}`, value: 500 }]),
            at(consumers, [{ labels: `{${queue}}`, value: 2 }]),
          ],
        },
      ],
    };
    const dir = mkdtempSync(join(tmpdir(), 'herald-dashboard-'));
    try {
      writeFileSync(join(dir, 'dashboard.test.yml'), stringify(tests));
      const run = spawnSync(promtool, ['test', 'rules', 'dashboard.test.yml'], { encoding: 'utf8', cwd: dir });
      expect(`${run.stdout}${run.stderr}`).toMatch(/SUCCESS/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('inhibit, in the example Alertmanager configuration, only alerts and monitor alarms that exist (amtool checks it where installed)', () => {
    const config = parse(readFileSync(ALERTMANAGER, 'utf8')) as { inhibit_rules: Array<{ source_matchers: string[]; target_matchers: string[]; equal: string[] }> };
    const alerts = new Set(rules().map((r) => r.alert));
    const unknown: string[] = [];
    expect(config.inhibit_rules.length).toBeGreaterThan(5);
    for (const rule of config.inhibit_rules) {
      for (const matcher of [...rule.source_matchers, ...rule.target_matchers]) {
        const [, name, value] = /^(\w+)="([^"]*)"$/.exec(matcher) ?? [];
        if (name === 'alertname' && !alerts.has(value as string)) unknown.push(matcher);
        else if (name === 'alarm' && !(AlarmKinds as readonly string[]).includes(value as string)) unknown.push(matcher);
        else if (name !== 'alertname' && name !== 'alarm') unknown.push(matcher);
      }
    }
    expect(unknown).toEqual([]);
    if (amtool !== '') expect(execFileSync(amtool, ['check-config', ALERTMANAGER], { encoding: 'utf8' })).toMatch(/SUCCESS/);
  });

  it('the dashboard is valid JSON with a query on every panel', () => {
    const panels = dashboard().panels.filter((p) => p.type !== 'row');
    expect(panels.length).toBeGreaterThan(10);
    for (const p of panels) expect(p.targets?.length ?? 0, p.title).toBeGreaterThan(0);
  });
});
