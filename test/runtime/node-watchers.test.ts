/** NodeWatchers: the node-down push behind a session's running stage call. */
import { describe, expect, it } from 'vitest';
import { NodeWatchers } from '../../src/runtime/node-watchers.js';

describe('NodeWatchers', () => {
  it('calls the watchers of the node that went down, once, in subscription order, and forgets them', () => {
    const w = new NodeWatchers();
    const heard: string[] = [];
    w.watch('a', () => heard.push('a1'));
    w.watch('b', () => heard.push('b1'));
    w.watch('a', () => heard.push('a2'));
    expect(w.size).toBe(3);
    w.notify('a');
    expect(heard).toEqual(['a1', 'a2']);
    expect(w.size).toBe(1);
    w.notify('a'); // already told: nothing left to call
    expect(heard).toEqual(['a1', 'a2']);
    w.notify('b');
    expect(heard).toEqual(['a1', 'a2', 'b1']);
    expect(w.size).toBe(0);
  });

  it('an unsubscribe stops the call and frees the entry; twice, or after the notice, it does nothing', () => {
    const w = new NodeWatchers();
    const heard: string[] = [];
    const f = () => heard.push('f');
    const off1 = w.watch('a', f);
    const off2 = w.watch('a', f); // the same function twice is two subscriptions
    off1();
    off1();
    expect(w.size).toBe(1);
    w.notify('a');
    expect(heard).toEqual(['f']);
    off2();
    const off3 = w.watch('a', f); // a new subscription after the notice is not touched by the old unsubscribe
    off2();
    expect(w.size).toBe(1);
    off3();
    expect(w.size).toBe(0);
  });

  it('a watcher that unsubscribes another during the notice does not stop it from being told', () => {
    const w = new NodeWatchers();
    const heard: string[] = [];
    let offB: () => void = () => {};
    w.watch('n', () => {
      heard.push('a');
      offB();
    });
    offB = w.watch('n', () => heard.push('b'));
    w.notify('n');
    expect(heard).toEqual(['a', 'b']);
  });
});
