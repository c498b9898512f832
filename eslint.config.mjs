import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';

/** Which lib alone may import each outside package (HOUSE_STYLE: a lib owns each outside thing). */
const owners = {
  amqplib: 'lib:messaging',
  pg: 'lib:db',
  kysely: 'lib:db',
  pino: 'lib:logging',
  'prom-client': 'lib:runtime',
  '@parse/node-apn': 'lib:providers',
  'firebase-admin': 'lib:providers',
  'web-push': 'lib:providers',
};
const bannedFor = (tag) => Object.entries(owners).filter(([, owner]) => owner !== tag).map(([pkg]) => pkg);

/** Which libs each lib may use. Apps may use any lib, never another app. */
const libDeps = {
  'lib:contracts': [],
  'lib:config': [],
  'lib:logging': [],
  'lib:runtime': ['lib:logging'],
  'lib:messaging': ['lib:contracts', 'lib:logging', 'lib:runtime'],
  'lib:db': ['lib:contracts', 'lib:logging'],
  'lib:providers': ['lib:contracts', 'lib:logging'],
  'lib:client': ['lib:contracts', 'lib:logging', 'lib:messaging', 'lib:providers'],
  'lib:rate-limiter': ['lib:contracts', 'lib:logging', 'lib:runtime'],
  'lib:delivery': ['lib:contracts', 'lib:config', 'lib:db', 'lib:logging', 'lib:messaging', 'lib:providers', 'lib:rate-limiter', 'lib:runtime'],
  'lib:scheduling': ['lib:contracts'],
  'lib:testing': ['lib:contracts', 'lib:db', 'lib:logging'],
  'lib:monitoring': [],
};

/**
 * The module-boundary rule; `extra` lib tags are allowed everywhere (spec files get lib:testing),
 * and `cycles` are project pairs whose cycle is allowed.
 */
function boundaries(extra, cycles = []) {
  return [
    'error',
    {
      enforceBuildableLibDependency: false,
      allow: [],
      ignoredCircularDependencies: cycles,
      depConstraints: [
        { sourceTag: 'type:app', onlyDependOnLibsWithTags: ['type:lib'] },
        ...Object.entries(libDeps).map(([tag, deps]) => ({
          sourceTag: tag,
          onlyDependOnLibsWithTags: [...deps, ...extra],
          bannedExternalImports: bannedFor(tag),
        })),
        ...['app:registrar', 'app:demuxer', 'app:apns-pusher', 'app:fcm-pusher', 'app:sandbox', 'app:cli', 'app:apns-descheduler', 'app:fcm-descheduler', 'app:apns-invalidator', 'app:fcm-invalidator', 'app:web-pusher', 'app:web-invalidator', 'app:monitor', 'app:api', 'app:webhook-fanout', 'app:webhook-pusher'].map((tag) => ({
          sourceTag: tag,
          onlyDependOnLibsWithTags: ['type:lib'],
          bannedExternalImports: bannedFor(tag),
        })),
      ],
    },
  ];
}

export default tseslint.config(
  { ignores: ['**/node_modules/**', '**/dist/**', '.nx/**', 'test-results/**', '**/*.mjs'] },
  ...nx.configs['flat/base'],
  ...nx.configs['flat/typescript'],
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      '@nx/enforce-module-boundaries': boundaries([]),
    },
  },
  {
    // Specs may use the shared test helpers from any project. The db lib's specs use its TCP proxy
    // (a database that stops answering) though @herald/testing builds on @herald/db: a cycle
    // through specs only, since db's own sources may not depend on lib:testing (libDeps).
    files: ['**/*.spec.ts', '**/test-helpers.ts', '**/spec-database.ts'],
    rules: { '@nx/enforce-module-boundaries': boundaries(['lib:testing'], [['@herald/db', '@herald/testing']]) },
  },
);
