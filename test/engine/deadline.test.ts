import test from 'ava';
import { ABANDON_AFTER_MS, DeadlineError, withDeadline } from '../../src/engine/deadline.js';

test('a deadline stops the work and waits for it to settle before rejecting', async (t) => {
  const order: string[] = [];
  const error = await t.throwsAsync(
    withDeadline('making a thing', 20, new AbortController().signal, async (signal) => {
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      order.push('work saw the abort');
      await new Promise((resolve) => setTimeout(resolve, 50));
      order.push('work finished its rollback');
    }),
  );
  order.push('withDeadline rejected');
  t.true(error instanceof DeadlineError);
  t.deepEqual(order, ['work saw the abort', 'work finished its rollback', 'withDeadline rejected']);
});

test("the parent's abort rejects with its reason, after the work settled, even if the work succeeded", async (t) => {
  const parent = new AbortController();
  const made: string[] = [];
  setTimeout(() => parent.abort(new Error('Ctrl-C')), 10);
  const error = await t.throwsAsync(
    withDeadline('creating', 10_000, parent.signal, async () => {
      await new Promise((resolve) => setTimeout(resolve, 40));
      made.push('node'); // recorded by the work itself: the caller's cleanup will find it
      return 'node';
    }),
  );
  t.is(error!.message, 'Ctrl-C');
  t.deepEqual(made, ['node']);
});

test('work that never notices is abandoned after ABANDON_AFTER_MS, and said so', async (t) => {
  t.timeout(ABANDON_AFTER_MS + 5000);
  const abandoned: string[] = [];
  const started = Date.now();
  await t.throwsAsync(
    withDeadline(
      'a hung call',
      10,
      new AbortController().signal,
      () => new Promise(() => {}),
      (what) => abandoned.push(what),
    ),
    { instanceOf: DeadlineError },
  );
  t.deepEqual(abandoned, ['a hung call']);
  t.true(Date.now() - started >= ABANDON_AFTER_MS);
});
