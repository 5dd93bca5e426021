import { nameUnknown } from '../errors.js';
import { type RequestContext, sendJson } from './context.js';
import { paginate } from './paginate.js';

/** `GET /v2/<name>/tags/list` (spec "Listing Tags"), in lexical order, paginated with `n` and `last`. */
export async function handleTagsList(ctx: RequestContext, name: string): Promise<void> {
  if (!(await ctx.repositories.hasRepository(name))) throw nameUnknown(name);
  const { page, headers } = paginate(ctx, await ctx.repositories.listTags(name), `/v2/${name}/tags/list`);
  sendJson(ctx, 200, { name, tags: page }, headers);
}
