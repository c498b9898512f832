import { WorkQueues } from '@herald/contracts';

/**
 * The queue as given when it is one of Herald's work queues (`push.apns.send`) or its parked queue
 * (`push.apns.send.parked`); otherwise a one-line error naming it and the queues there are, before
 * RabbitMQ is asked (which would answer a bare 404).
 */
export function knownWorkQueue(queue: string): string {
  const work = queue.endsWith('.parked') ? queue.slice(0, -'.parked'.length) : queue;
  if (!(WorkQueues as readonly string[]).includes(work)) {
    throw new Error(`no queue "${queue}": parked messages live under Herald's work queues, ${WorkQueues.join(', ')}`);
  }
  return queue;
}
