/**
 * Runs tasks of one key one after the other (tasks of different keys run
 * side by side). `run` answers null, and runs nothing, when `maxWaiting`
 * tasks of that key are already queued.
 */
export interface KeyedQueue {
  run<T>(key: string, task: () => Promise<T>): Promise<T> | null;
}

export function createKeyedQueue(maxWaiting = Infinity): KeyedQueue {
  const queues = new Map<string, { tail: Promise<unknown>; waiting: number }>();
  return {
    run<T>(key: string, task: () => Promise<T>): Promise<T> | null {
      const queue = queues.get(key) ?? { tail: Promise.resolve(), waiting: 0 };
      if (queue.waiting >= maxWaiting) return null;
      queue.waiting++;
      queues.set(key, queue);
      const result = queue.tail.then(task, task);
      queue.tail = result.catch(() => {});
      queue.tail.then(() => {
        queue.waiting--;
        if (queue.waiting === 0 && queues.get(key) === queue) queues.delete(key);
      });
      return result;
    },
  };
}
