import { describe, expect, it } from 'vitest';
import { commonConfig } from './common.ts';
import { configProblems } from './load-config.ts';
import { int, url } from './vars.ts';

describe('a refused variable never shows a credential or a secret', () => {
  // A generated password with an unescaped '/', '#' or '?' is the usual mistake; its value went to stderr and the pod's log.
  it('masks the user and password of a URL that does not parse, and still names the variable', () => {
    const problems = configProblems(commonConfig, {
      AMQP_URL: 'amqp://herald:s3cr/et#1@rabbit:5672/herald',
      DATABASE_URL: 'postgres://herald:pa/ss?w@db:5432/herald',
    });
    expect(problems).toEqual([
      expect.stringMatching(/^AMQP_URL must be a URL .*got "amqp:\/\/\*\*\*@rabbit:5672\/herald"$/),
      expect.stringMatching(/^DATABASE_URL must be a URL .*got "postgres:\/\/\*\*\*@db:5432\/herald"$/),
    ]);
    expect(problems.join('\n')).not.toMatch(/s3cr|pa\/ss/);
    expect(configProblems({ API: url(['http', 'https'], 'an API') }, { API: 'https://ops:p#w@monitor:15672/' })).toEqual([
      expect.stringMatching(/^API must be a URL .*got "https:\/\/\*\*\*@monitor:15672\/"$/),
    ]);
  });

  it('masks the pieces of a password cut by a comma in a list of URLs', () => {
    const problems = configProblems(commonConfig, { AMQP_URL: 'amqp://herald:ab,cd@rabbit/herald' });
    expect(problems).toEqual([expect.stringMatching(/^AMQP_URL entry [12] must be a URL/)]);
    expect(problems.join('\n')).not.toMatch(/ab|cd@/);
    expect(configProblems(commonConfig, { AMQP_URL: 'amqp://rabbit-1:5672,amqp://rabbit 2' })).toEqual([expect.stringContaining('got "amqp://rabbit 2"')]);
  });

  it("does not echo a secret variable's value in its parser's message", () => {
    const spec = { TOKEN_TTL: int('a secret number', { secret: true }), PLAIN: int('a number') };
    expect(configProblems(spec, { TOKEN_TTL: 'hunter2', PLAIN: 'seven' })).toEqual(['TOKEN_TTL must be an integer, got "***"', 'PLAIN must be an integer, got "seven"']);
  });
});
