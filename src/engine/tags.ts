/**
 * Tags of the embedded registry that devpivot points (what a CI push of a tag does): a node's `follow:` tag before
 * its Ignition names it, and each `tag` step. The World records which oscontainer each names now.
 */
import { DevpivotError } from '../core/errors.js';
import { PHASE_DEADLINES, withDeadline } from './deadline.js';
import { type PrepareContext, repositoryName, type World } from './world.js';

/** Each `follow:` tag names its node's pivot target before the node's Ignition names it. */
export async function pointFollowedTags(context: PrepareContext, world: World): Promise<void> {
  for (const def of context.scenario.nodes) {
    if (!def.follow || !def.pivot) continue;
    await tagOscontainer(context, world, def.pivot, def.follow);
  }
}

/** Point `ref` (`REPO:TAG`) of the embedded registry at oscontainer `name`; recorded in the World. */
export async function tagOscontainer(
  context: Pick<PrepareContext, 'deps' | 'bus' | 'signal'>,
  world: World,
  name: string,
  ref: string,
): Promise<void> {
  const registry = world.registry;
  const image = world.images.get(name);
  if (!registry || !image)
    throw new DevpivotError('TAG_EXTERNAL_REGISTRY', `cannot point ${ref} at ${name}: tags need the embedded registry`);
  const colon = ref.lastIndexOf(':');
  await withDeadline(`pointing ${ref} at ${name}`, PHASE_DEADLINES.registry, context.signal, (signal) =>
    context.deps.tagOscontainer({
      registry: registry.url,
      from: `${repositoryName(name)}@${image.digest}`,
      repository: ref.slice(0, colon),
      tag: ref.slice(colon + 1),
      bus: context.bus,
      signal,
    }),
  );
  world.tags.set(ref, name);
}
