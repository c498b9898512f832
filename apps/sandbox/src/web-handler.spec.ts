import { describe, expect, it } from 'vitest';
import { appleTopicRefusal } from './web-handler.ts';

describe("the sandbox's push service as Safari's", () => {
  it('refuses a Topic of 1, 5, 9 … 29 characters (BadWebPushTopic, as observed), takes other lengths; a generic service takes any', () => {
    for (const topic of ['a', 'spike', 'new_event', 'notification-test', 'x'.repeat(29)]) {
      expect(appleTopicRefusal('apple', topic)).toMatch(new RegExp(`"${topic}" is ${topic.length} characters.*BadWebPushTopic`));
      expect(appleTopicRefusal('generic', topic)).toBeUndefined();
    }
    for (const topic of ['ab', 'abc', 'spik', 'newEvent', 'neueangebote', 'x'.repeat(32), undefined]) expect(appleTopicRefusal('apple', topic)).toBeUndefined();
  });
});
