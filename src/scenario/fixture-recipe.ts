/**
 * The fixture OS versions, as its recipe makes them (`images/fixture/build.sh`: the commits of versions 1, 2 and
 * 3, and the bootable disk of version 1). Known without building, so `fixture:9` or `image: fixture:2` is a
 * scenario error before anything runs. test/scenario/fixture-recipe.test.ts holds this to the recipe.
 */
export const FIXTURE_RECIPE = { versions: ['1', '2', '3'], bootable: ['1'] } as const;
