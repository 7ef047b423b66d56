/**
 * The Dockerfile and docker-compose.yml, read as files (Docker cannot run here): a multi-stage
 * build whose runtime stage holds only dist/ and production dependencies, runs as a non-root user
 * with a HEALTHCHECK on /healthz and DATA_DIR in a volume; and a compose file with Kafka 3.9 in
 * KRaft mode, a single-node MongoDB replica set, EventStoreDB 24.10 and the service wired to them.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import yaml from 'js-yaml';
import { ROOT } from '../support/processes.ts';
import { SERVICE_NODE_FLAGS } from '../../scripts/bench/processes.ts';

interface Instruction {
  keyword: string;
  args: string;
}
interface Stage {
  name: string;
  instructions: Instruction[];
}

/** The Dockerfile's stages, each with its instructions (continuation lines joined, comments dropped). */
const stagesOf = (text: string): Stage[] => {
  const logical = text
    .replace(/\\\r?\n/g, ' ')
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
  const stages: Stage[] = [];
  for (const line of logical) {
    const [, keyword = '', args = ''] = /^(\S+)\s*(.*)$/.exec(line) ?? [];
    const instruction = { keyword: keyword.toUpperCase(), args };
    if (instruction.keyword === 'FROM')
      stages.push({ name: /\sAS\s+(\S+)$/i.exec(args)?.[1] ?? String(stages.length), instructions: [] });
    stages.at(-1)?.instructions.push(instruction);
  }
  return stages;
};

const all = (stage: Stage, keyword: string) => stage.instructions.filter((i) => i.keyword === keyword);

describe('Dockerfile', () => {
  const text = fs.readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
  const stages = stagesOf(text);
  const runtime = stages.at(-1)!;
  const stage = (name: string) => stages.find((s) => s.name === name)!;
  /** The stage a `COPY --from=<stage> <source>` of the runtime stage takes `source` from. */
  const copiedFrom = (source: string) =>
    all(runtime, 'COPY')
      .map((c) => /--from=(\S+)\s+(?:--\S+\s+)*(\S+)/.exec(c.args))
      .find((m) => m?.[2] === source)?.[1];

  it('is multi-stage: the runtime stage takes dist/ from a stage that compiled it and node_modules from one without dev dependencies', () => {
    expect(stages.length).to.be.at.least(2);
    const build = copiedFrom('/app/dist');
    const deps = copiedFrom('/app/node_modules');
    expect(build, 'dist/ copied from a build stage').to.be.a('string');
    expect(deps, 'node_modules copied from a stage').to.be.a('string');
    const runs = (name: string) => all(stage(name), 'RUN').map((r) => r.args);
    expect(runs(build!).join('\n'))
      .to.match(/npm ci(?! --omit)/)
      .and.to.include('npm run build');
    expect(runs(deps!).join('\n')).to.include('npm ci --omit=dev');
    expect(runs(deps!).join('\n')).to.not.match(/npm ci(?! --omit=dev)/);
  });

  it('the runtime stage copies nothing from the build context but package.json: no sources, tests or local files', () => {
    const fromContext = all(runtime, 'COPY')
      .filter((c) => !c.args.includes('--from='))
      .map((c) =>
        c.args
          .replace(/--\S+\s+/g, '')
          .split(/\s+/)
          .slice(0, -1),
      )
      .flat();
    expect(fromContext).to.deep.equal(['package.json']);
    expect(
      all(runtime, 'RUN')
        .map((r) => r.args)
        .join('\n'),
    ).to.not.include('npm');
    expect(all(runtime, 'CMD').map((c) => c.args)).to.deep.equal(['["node", "--v8-pool-size=1", "dist/src/main.js"]']);
  });

  it('starts the service with the node flags of `npm start`, which the bench uses too (decision 081)', () => {
    const [cmd] = all(runtime, 'CMD');
    const container = (JSON.parse(cmd!.args) as string[]).slice(1, -1);
    const scripts = (
      JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
    ).scripts;
    const npmStart = scripts.start!.split(/\s+/).slice(2, -1); // exec node <flags> dist/src/main.js
    expect(container).to.deep.equal(SERVICE_NODE_FLAGS);
    expect(npmStart).to.deep.equal(SERVICE_NODE_FLAGS);
    expect(SERVICE_NODE_FLAGS).to.include('--v8-pool-size=1');
  });

  it('runs as a non-root user, with a HEALTHCHECK on /healthz and DATA_DIR in a volume', () => {
    const users = all(runtime, 'USER').map((u) => u.args);
    expect(users.length).to.be.at.least(1);
    expect(users.at(-1)).to.not.match(/^(root|0)(:|$)/);
    const [healthcheck] = all(runtime, 'HEALTHCHECK');
    expect(healthcheck?.args).to.match(/CMD/).and.to.include('/healthz');
    const env = all(runtime, 'ENV')
      .map((e) => e.args)
      .join(' ');
    const dataDir = /DATA_DIR=(\S+)/.exec(env)?.[1];
    expect(dataDir).to.equal('/data');
    expect(
      all(runtime, 'VOLUME')
        .map((v) => v.args)
        .join(' '),
    ).to.include(`"${dataDir}"`);
  });

  it('copies only files this repository has into its build stages, and the build context leaves local state out', () => {
    for (const s of stages)
      for (const copy of all(s, 'COPY').filter((c) => !c.args.includes('--from=')))
        for (const source of copy.args
          .replace(/--\S+\s+/g, '')
          .split(/\s+/)
          .slice(0, -1))
          expect(fs.existsSync(path.join(ROOT, source)), `${s.name}: COPY ${source}`).to.equal(true);
    const ignored = fs.readFileSync(path.join(ROOT, '.dockerignore'), 'utf8').split(/\r?\n/);
    expect(ignored).to.include.members(['.git', 'node_modules', 'dist', 'data']);
  });
});

describe('docker-compose.yml', () => {
  const compose = yaml.load(fs.readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8')) as {
    services: Record<string, any>;
    volumes: Record<string, unknown>;
  };
  const { services } = compose;

  it('runs EventStoreDB 24.10, a single-node MongoDB replica set, Kafka 3.9 in KRaft mode and the service in four roles', () => {
    expect(Object.keys(services).sort()).to.deep.equal([
      'api',
      'dispatcher',
      'eventstore',
      'kafka',
      'mongo',
      'projector',
      'publisher',
    ]);
    expect(services.eventstore.image).to.equal('eventstore/eventstore:24.10');
    expect(services.mongo.command).to.include('--replSet');
    expect(JSON.stringify(services.mongo.healthcheck.test)).to.include('rs.initiate');
    const kafka = services.kafka;
    expect(kafka.image).to.match(/^apache\/kafka:3\.9\.\d+$/);
    expect(kafka.environment.KAFKA_PROCESS_ROLES.split(',').sort()).to.deep.equal(['broker', 'controller']);
    expect(kafka.environment.CLUSTER_ID, 'a base64 UUID').to.match(/^[A-Za-z0-9_-]{22}$/);
    expect(kafka.environment).to.not.have.property('KAFKA_ZOOKEEPER_CONNECT');
  });

  for (const role of ['api', 'projector', 'publisher', 'dispatcher']) {
    it(`builds \`${role}\` from the Dockerfile with ROLE=${role}, pointed at the servers by their service names`, () => {
      const service = services[role];
      expect(service.build).to.equal('.');
      expect(service.image).to.equal('voucher-service:local');
      const env = service.environment;
      expect(env.ROLE).to.equal(role);
      expect(new URL(env.EVENTSTORE_URL).hostname).to.equal('eventstore');
      expect(new URL(env.MONGODB_URL).hostname).to.equal('mongo');
      const [broker] = env.KAFKA_BROKERS.split(',');
      expect(broker.split(':')[0]).to.equal('kafka');
      // what the service connects to is a listener Kafka advertises to the other containers
      expect(services.kafka.environment.KAFKA_ADVERTISED_LISTENERS).to.include(`//${broker}`);
      expect(service.volumes).to.deep.equal([`${role}-data:/data`]);
      expect(compose.volumes).to.have.property(`${role}-data`);
      expect(Object.keys(service.depends_on).sort()).to.deep.equal(['eventstore', 'kafka', 'mongo']);
      // only the API is published on the host
      expect(service.ports ?? []).to.deep.equal(role === 'api' ? ['3000:3000'] : []);
    });
  }
});
