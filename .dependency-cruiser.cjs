/**
 * Dependencies point inward: core (generic event sourcing) and domain (pure voucher rules) import
 * no outer layer; projections see only those two; application wires use cases from them; adapters
 * (infrastructure) and the HTTP layer (which renders read-model documents) sit outside.
 * composition.ts and main.ts may import anything.
 * `npm run lint` runs this; a violation or a cycle fails it.
 */
const layer = (name, mayImport) => ({
  name: `${name}-imports-inward-only`,
  severity: 'error',
  from: { path: `^src/${name}/` },
  to: { path: '^src/', pathNot: mayImport.map((l) => `^src/${l}/`) },
});

module.exports = {
  forbidden: [
    { name: 'no-cycles', severity: 'error', from: {}, to: { circular: true } },
    layer('core', ['core']),
    layer('domain', ['domain', 'core']),
    layer('projections', ['projections', 'domain', 'core']),
    layer('application', ['application', 'projections', 'domain', 'core']),
    {
      ...layer('infrastructure', ['infrastructure', 'core', 'domain']),
      // The worker threads' entry modules are those threads' composition roots: they build the
      // stores and run the projection groups or the webhook publisher and dispatcher, as
      // composition.ts does on the main thread.
      from: {
        path: '^src/infrastructure/',
        pathNot: [
          '^src/infrastructure/eventStore/sqliteWriterThread[.]worker[.]ts$',
          '^src/infrastructure/projector/projectorThread[.]worker[.]ts$',
          '^src/infrastructure/webhooks/webhookThread[.]worker[.]ts$',
        ],
      },
    },
    layer('http', ['http', 'application', 'projections', 'domain', 'core']),
    {
      name: 'src-never-imports-tests-or-scripts',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(test|scripts)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
