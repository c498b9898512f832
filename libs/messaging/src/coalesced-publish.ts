import { Batcher } from './batcher.ts';
import { BrokerUnavailableError, PublishFailedError } from './errors.ts';
import type { EachPublisher, OutboundMessage } from './types.ts';

/** Jobs one RabbitMQ message carries when published at once (ADR 0018): coalescedPublish's default, and so the client's and the API's (JOB_PACK_SIZE). */
export const DEFAULT_JOB_PACK_SIZE = 10;

export interface CoalescedPublishOptions {
  /** Messages to one exchange and routing key that may share an AMQP message (pack.ts); default DEFAULT_JOB_PACK_SIZE. */
  packMax?: number;
  /** Calls that may wait together for one round of confirms; default 500. */
  maxBatch?: number;
  /**
   * At most this many rounds awaiting their confirms at once; default 1. With more, a call made
   * while fewer are waits for one to end or MORE_WAIT_MS, whichever is first.
   */
  maxInFlight?: number;
  /**
   * Longest a call may wait for its confirm, counted from the call, not from its round (default:
   * none). With rounds one at a time and a broker that does not confirm, calls queued behind a
   * round waited for it first: the Nth round's calls N times the publisher's deadline. A call
   * past it whose round had started is rejected with PublishFailedError (its message may still
   * arrive); one whose round had not is left out of it and rejected with PublishNotSentError.
   */
  callTimeoutMs?: number;
}

/** With maxInFlight > 1: how long a call made while a round awaits its confirms may wait for more to join it. */
const MORE_WAIT_MS = 5;

/**
 * A call callTimeoutMs rejected before its round started: it waited behind rounds RabbitMQ had not
 * confirmed and was left out, so nothing of this call was sent. A BrokerUnavailableError (the
 * publish was not attempted): the client library rejects the caller's job with it as not sent.
 * It speaks for this call only: the HTTP API, where a repost of the same job may have been handed
 * to this publisher meanwhile (a caller whose own timeout is shorter), answers it as not confirmed
 * and keeps the job's id, as for a PublishFailedError.
 */
export class PublishNotSentError extends BrokerUnavailableError {
  override name = 'PublishNotSentError';
}

interface Call {
  msg: OutboundMessage;
  resolve: () => void;
  reject: (err: unknown) => void;
  /** Its round started: its message was handed to the publisher, and may arrive whatever happens next. */
  started?: boolean;
  /** Rejected by callTimeoutMs before its round started: left out of it. */
  expired?: boolean;
}

/**
 * A publish for many independent callers, each resolved by its own message's confirm, whose
 * concurrent calls share AMQP messages (packed, ADR 0016): RabbitMQ's cost is per message (the
 * channel's routing and confirm, the quorum log, the delivery and its ack), and a publisher calling
 * once per job otherwise pays it for every job (ADR 0018). Group commit (Batcher with
 * `maxInFlight`): a call made while no round awaits its confirms goes at the end of the turn,
 * alone or with the turn's other calls; calls made while one does wait for it and go together as
 * the next round. So a lone call waits for nothing, and under load a call waits at most one round
 * of confirms. Each call is settled by the AMQP message that carried it (publishEach): a refused
 * message fails only the calls it carried. The consumer splits packs before its handler sees them
 * (consumer.ts), so a consumer sees each message on its own, settled, retried or parked alone.
 */
export function coalescedPublish(publisher: EachPublisher, options: CoalescedPublishOptions = {}): (msg: OutboundMessage) => Promise<void> {
  const packMax = options.packMax ?? DEFAULT_JOB_PACK_SIZE;
  const batcher = new Batcher<Call>(options.maxBatch ?? 500, MORE_WAIT_MS, (calls) => publishRound(publisher, calls, packMax), options.maxInFlight ?? 1);
  const timeoutMs = options.callTimeoutMs;
  return (msg) =>
    new Promise<void>((resolve, reject) => {
      if (timeoutMs === undefined) return batcher.add({ msg, resolve, reject });
      const call: Call = {
        msg,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
        reject: (err) => {
          clearTimeout(timer);
          reject(err);
        },
      };
      const timer = setTimeout(() => {
        if (call.started === true) {
          reject(new PublishFailedError(`publish to "${msg.exchange}" not confirmed: no confirm within ${timeoutMs} ms (waiting for RabbitMQ); the message may still arrive, publish it again with the same id`));
          return;
        }
        call.expired = true;
        reject(
          new PublishNotSentError(
            `publish to "${msg.exchange}" not sent: no confirm within ${timeoutMs} ms, still waiting behind earlier publishes RabbitMQ had not confirmed; it was left out, nothing of it will arrive: publish it again, corrected if need be`,
          ),
        );
      }, timeoutMs);
      batcher.add(call);
    });
}

/** One round: every call in one publishEach, each call settled by its own message's result. */
async function publishRound(publisher: EachPublisher, queued: readonly Call[], packMax: number): Promise<void> {
  const calls = queued.filter((c) => c.expired !== true);
  if (calls.length === 0) return;
  for (const c of calls) c.started = true;
  let results: PromiseSettledResult<void>[];
  try {
    results = await publisher.publishEach(calls.map((c) => c.msg), { packMax });
  } catch (err) {
    calls.forEach((c) => c.reject(err));
    return;
  }
  calls.forEach((c, i) => {
    const r = results[i];
    if (r?.status === 'fulfilled') c.resolve();
    else c.reject(r?.reason);
  });
}
