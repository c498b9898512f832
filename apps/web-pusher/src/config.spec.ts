import { configProblems, loadConfig } from '@herald/config';
import { describe, expect, it } from 'vitest';
import { webPusherConfig } from './config.ts';

const problems = (env: Record<string, string>): readonly string[] => configProblems(webPusherConfig, env);

describe('web-pusher settings', () => {
  // Signed with such a subject, every push to Safari is answered 403 BadJwtToken (and the app is banned).
  it('refuses a WEB_PUSH_VAPID_SUBJECT no push service can reach, naming the variable', () => {
    for (const subject of ['https://localhost', 'mailto:ops@localhost', 'https://10.0.0.7/contact', 'mailto:ops@mailhost']) {
      expect([subject, problems({ WEB_PUSH_VAPID_SUBJECT: subject })]).toEqual([subject, [expect.stringMatching(/^WEB_PUSH_VAPID_SUBJECT must be a contact a push service can reach/)]]);
    }
    expect(problems({ WEB_PUSH_VAPID_SUBJECT: 'http://example.com' })).toEqual([expect.stringMatching(/^WEB_PUSH_VAPID_SUBJECT must be a mailto: or https: URL/)]);
    expect(problems({ WEB_PUSH_VAPID_SUBJECT: 'mailto:ops@example.com' })).toEqual([]);
    expect(loadConfig(webPusherConfig, { WEB_PUSH_VAPID_SUBJECT: ' https://example.com/contact ' }).WEB_PUSH_VAPID_SUBJECT).toBe('https://example.com/contact');
  });
});
