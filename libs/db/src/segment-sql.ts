import { sql, type RawBuilder } from 'kysely';
import { appVersionParts, type SegmentField, type SegmentFilter } from '@herald/contracts';

/**
 * A parsed segment (libs/contracts segment-filter.ts) as a boolean SQL expression over the devices
 * row aliased `alias`. Every value travels as a parameter; identifiers are this file's constants.
 * A comparison on a missing attribute (NULL) is false, never NULL, so `not (…)` matches devices
 * that lack the attribute (the language's documented rule). Plain `column op $n` conjuncts let the
 * planner use the (app, column) indexes of migration 0020 when they are selective.
 */
export function segmentSql(filter: SegmentFilter, now: Date, alias = 'd'): RawBuilder<boolean> {
  const col = (name: string) => sql.ref(`${alias}.${name}`);
  switch (filter.kind) {
    case 'and':
    case 'or':
      return sql<boolean>`(${sql.join(
        filter.args.map((a) => segmentSql(a, now, alias)),
        filter.kind === 'and' ? sql` and ` : sql` or `,
      )})`;
    case 'not':
      return sql<boolean>`(not ${segmentSql(filter.arg, now, alias)})`;
    case 'lastSeen': {
      const since = new Date(now.getTime() - filter.hours * 3_600_000).toISOString();
      const c = col('last_seen_at');
      return filter.relation === 'within'
        ? sql<boolean>`(${c} is not null and ${c} >= ${since}::timestamptz)`
        : sql<boolean>`(${c} is not null and ${c} < ${since}::timestamptz)`;
    }
    case 'compare':
      return compare(filter.field, filter.op, filter.value, col);
    case 'in':
      return inList(filter.field, filter.values, col);
  }
}

type Col = (name: string) => ReturnType<typeof sql.ref>;

const COLUMNS: Record<Exclude<SegmentField, 'language' | 'appVersion'>, string> = { platform: 'platform', locale: 'locale', timezone: 'timezone' };
const OPS = { '=': sql`=`, '!=': sql`<>`, '<': sql`<`, '<=': sql`<=`, '>': sql`>`, '>=': sql`>=` } as const;

/** `language = "de"` matches locale "de" and "de-…" (a C-collation btree serves the prefix). */
function language(value: string, col: Col): RawBuilder<boolean> {
  const c = col('locale');
  return sql<boolean>`(${c} is not null and (${c} = ${value} or ${c} like ${`${value}-%`}))`;
}

function compare(field: SegmentField, op: keyof typeof OPS, value: string, col: Col): RawBuilder<boolean> {
  if (field === 'appVersion') {
    const c = col('app_version_parts');
    return sql<boolean>`(${c} is not null and ${c} ${OPS[op]} ${appVersionParts(value)}::int[])`;
  }
  if (field === 'language') {
    return op === '=' ? language(value, col) : sql<boolean>`(${col('locale')} is not null and not ${language(value, col)})`;
  }
  const c = col(COLUMNS[field]);
  return sql<boolean>`(${c} is not null and ${c} ${OPS[op]} ${value})`;
}

function inList(field: SegmentField, values: readonly string[], col: Col): RawBuilder<boolean> {
  if (field === 'appVersion') {
    const c = col('app_version_parts');
    return sql<boolean>`(${c} is not null and ${c} in (${sql.join(values.map((v) => sql`${appVersionParts(v)}::int[]`))}))`;
  }
  if (field === 'language') return sql<boolean>`(${sql.join(values.map((v) => language(v, col)), sql` or `)})`;
  const c = col(COLUMNS[field]);
  return sql<boolean>`(${c} is not null and ${c} = any(${[...values]}::text[]))`;
}
