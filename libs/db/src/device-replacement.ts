import { sql, type RawBuilder } from 'kysely';

/**
 * Token rotation (migration 0045): a register naming the token it replaces links the old device's
 * row to the new one's (devices.replaced_by, device-registration.ts). A push made for the old token
 * goes to the live device the chain ends at (the pushers' claim, delivery-ledger.ts), a fan-out's
 * chunks count the two rows once (fanout-repository.ts), and a user job's fan-out handled again
 * addresses the old device as its first pass did (device-targets.ts).
 */

/** Links of a chain of replacements followed at most: a longer chain (a token replaced this often while one push waited) ends dead. */
export const MOST_REPLACEMENTS = 16;

/**
 * A subquery: the live device (id, token) the chain of replacements of the device `deviceId` (a
 * column reference) ends at, or no row (it was not replaced, or the chain ends at a dead or deleted
 * device). Each row by its primary key, through lateral probes kept from being flattened (a plan
 * made on an empty devices scanned it). Its own aliases (chain, chain_from, chain_next) are named so
 * that `deviceId` cannot be taken for one of them.
 */
export const liveReplacementSql = (deviceId: RawBuilder<unknown>) => sql`
      with recursive chain (id, token, invalidated_at, replaced_by, hops) as (
        select chain_next.id, chain_next.token, chain_next.invalidated_at, chain_next.replaced_by, 1
        from devices chain_from cross join lateral (select * from devices n where n.id = chain_from.replaced_by offset 0) chain_next
        where chain_from.id = ${deviceId}
        union all
        select chain_next.id, chain_next.token, chain_next.invalidated_at, chain_next.replaced_by, c.hops + 1
        from chain c cross join lateral (select * from devices n where n.id = c.replaced_by offset 0) chain_next
        where c.invalidated_at is not null and c.hops < ${sql.lit(MOST_REPLACEMENTS)}
      )
      select id, token from chain where invalidated_at is null limit 1`;
