import { withTimeout } from '../src/timeout';

describe('withTimeout', () => {
  it('settles as the work does when the work is first', async () => {
    const timedOut = jest.fn(() => new Error('timed out'));
    await expect(withTimeout(Promise.resolve(7), 1000, timedOut)).resolves.toBe(7);
    await expect(withTimeout(true, 1000, timedOut)).resolves.toBe(true);
    await expect(withTimeout(Promise.reject(new Error('failed')), 1000, timedOut)).rejects.toThrow('failed');
    expect(timedOut).not.toHaveBeenCalled();
  });

  it('rejects with the error built when the time is up, while the work is still pending', async () => {
    let state = 'before';
    const result = withTimeout(new Promise<number>(() => undefined), 20, () => new Error(`timed out ${state}`));
    state = 'after';
    await expect(result).rejects.toThrow('timed out after');
  });
});
