import { sql, type Kysely } from 'kysely';
import type { HeraldTables } from './tables.ts';

/**
 * Why an audience cannot be expanded, or undefined: a job to a topic the app does not have (the
 * API answers 404, the demuxer parks the job). Followers and broadcasts always expand (to nobody,
 * at worst).
 */
export async function audienceProblem(db: Kysely<HeraldTables>, app: string, audience: { topic?: string }): Promise<string | undefined> {
  if (audience.topic === undefined) return undefined;
  const { rows } = await sql`select 1 from topics where app = ${app} and name = ${audience.topic}`.execute(db);
  return rows.length > 0 ? undefined : `unknown topic "${audience.topic}" of app "${app}"`;
}
