/**
 * js-yaml (installed with mocha, which reads .mocharc.yml with it) has no types of its own here:
 * the one call the tests make.
 */
declare module 'js-yaml' {
  export function load(text: string): unknown;
  const yaml: { load: typeof load };
  export default yaml;
}
