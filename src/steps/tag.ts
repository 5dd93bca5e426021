/**
 * `- tag: { oscontainer: NAME, as: REPO:TAG }`: point a tag of the embedded registry at an oscontainer, as a CI
 * push of a new build does; nodes that follow that tag (`follow:`) find it at their next `upgrade`.
 */
import type { StepBase, StepDefinition } from './definition.js';
import type { Position, StepReader, StepSource } from './reader.js';

export interface TagStep extends StepBase {
  kind: 'tag';
  oscontainer: string;
  /** `REPO:TAG` in the embedded registry. */
  as: string;
}

/** Label `tag v3 as os/stream:stable`. */
export function tagStep(oscontainer: string, as: string, pos: Position): TagStep {
  return { kind: 'tag', oscontainer, as, pos, label: `tag ${oscontainer} as ${as}` };
}

export const tag: StepDefinition<TagStep> = {
  schema: { keys: ['oscontainer', 'as'], required: ['oscontainer', 'as'], nodes: 'any' },
  parse({ body, pos }: StepSource, read: StepReader) {
    const f = read.fields(body, 'tag', tag.schema.keys, tag.schema.required);
    const oscontainer = read.oscontainer(f.get('oscontainer')!.value, 'tag.oscontainer');
    const as = read.tagRef(f.get('as')!.value, 'tag.as');
    if (read.registry !== 'embedded')
      read.fail(body, 'tag steps need the embedded registry', "remove 'registry:' from the scenario");
    return tagStep(oscontainer, as, pos);
  },
  async run(step, runtime) {
    await runtime.tagImage(step.oscontainer, step.as);
  },
};
