import { configProblems, loadConfig } from '@herald/config';
import { describe, expect, it } from 'vitest';
import { subjectWarning, webPusherConfig } from './config.ts';

const problems = (env: Record<string, string>): readonly string[] => configProblems(webPusherConfig, env);

describe('web-pusher settings', () => {
  // Signed with such a subject, every push to Safari is answered 403 BadJwtToken (parked as
  // process-vapid-refused); but refused at start, an upgrade would stop the web pushes Chrome's and Firefox's
  // services took all along: taken, with an error logged at start.
  it('takes a WEB_PUSH_VAPID_SUBJECT no push service can reach with a warning, and refuses one that is no mailto: or https: URL', () => {
    for (const subject of ['https://localhost', 'mailto:ops@localhost', 'https://10.0.0.7/contact', 'mailto:ops@mailhost']) {
      expect([subject, problems({ WEB_PUSH_VAPID_SUBJECT: subject })]).toEqual([subject, []]);
      expect([subject, subjectWarning(subject)]).toEqual([subject, expect.stringMatching(/^must be a contact a push service can reach/)]);
    }
    expect(subjectWarning('mailto:ops@example.com')).toBeUndefined();
    expect(subjectWarning(undefined)).toBeUndefined();
    expect(problems({ WEB_PUSH_VAPID_SUBJECT: 'http://example.com' })).toEqual([expect.stringMatching(/^WEB_PUSH_VAPID_SUBJECT must be a mailto: or https: URL/)]);
    expect(problems({ WEB_PUSH_VAPID_SUBJECT: 'mailto:ops@example.com' })).toEqual([]);
    expect(loadConfig(webPusherConfig, { WEB_PUSH_VAPID_SUBJECT: ' https://example.com/contact ' }).WEB_PUSH_VAPID_SUBJECT).toBe('https://example.com/contact');
  });

  // A push service of the operator's own on a private network; any other private address is refused at connect (SSRF).
  it('takes WEB_PUSH_ALLOWED_PRIVATE_ADDRESSES as addresses and CIDR ranges, and names an entry that is neither', () => {
    expect(loadConfig(webPusherConfig, {}).WEB_PUSH_ALLOWED_PRIVATE_ADDRESSES).toEqual([]);
    expect(loadConfig(webPusherConfig, { WEB_PUSH_ALLOWED_PRIVATE_ADDRESSES: ' 10.20.0.0/16, fd00::/8,192.168.7.7 ' }).WEB_PUSH_ALLOWED_PRIVATE_ADDRESSES).toEqual(['10.20.0.0/16', 'fd00::/8', '192.168.7.7']);
    expect(problems({ WEB_PUSH_ALLOWED_PRIVATE_ADDRESSES: '10.0.0.0/8,push.internal' })).toEqual([expect.stringMatching(/^WEB_PUSH_ALLOWED_PRIVATE_ADDRESSES .*"push\.internal" is not an IP address or CIDR range/)]);
    expect(problems({ WEB_PUSH_ALLOWED_PRIVATE_ADDRESSES: '10.0.0.0/40' })).toEqual([expect.stringMatching(/^WEB_PUSH_ALLOWED_PRIVATE_ADDRESSES .*prefix length must be 0 to 32/)]);
  });
});
