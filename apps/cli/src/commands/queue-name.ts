import { WorkQueues } from '@herald/contracts';

/** A delay queue (`herald.delay.<ms>ms`, contracts' delayQueueFor): it parks what no relay can place. */
const DELAY_QUEUE = /^herald\.delay\.\d+ms$/;

/**
 * The queue as given when it is one of Herald's work queues (`push.apns.send`), a delay queue
 * (`herald.delay.1000ms`) or the parked queue of either (`push.apns.send.parked`): the queues the
 * monitor's parked alarm counts; otherwise a one-line error naming it and the queues there are,
 * before RabbitMQ is asked (which would answer a bare 404).
 */
export function knownWorkQueue(queue: string): string {
  const work = queue.endsWith('.parked') ? queue.slice(0, -'.parked'.length) : queue;
  if (!(WorkQueues as readonly string[]).includes(work) && !DELAY_QUEUE.test(work)) {
    throw new Error(`no queue "${queue}": parked messages live under Herald's work queues, ${WorkQueues.join(', ')}, and its delay queues, herald.delay.<ms>ms`);
  }
  return queue;
}
