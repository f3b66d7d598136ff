/**
 * Monthly flag-request quota per project (docs/decide.md#quota-and-rate-limit; off when `monthlyLimit` is 0).
 * Counted in this process's memory per calendar month (UTC), so in distributed mode each decide process
 * enforces it on its own share.
 */
export class FlagQuota {
  private month = '';
  private readonly counts = new Map<number, number>();

  constructor(
    private readonly monthlyLimit: number,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** Counts one request; true when the project is over its quota (the request then gets no flags). */
  limited(projectId: number): boolean {
    if (this.monthlyLimit <= 0) return false;
    const month = this.now().toISOString().slice(0, 7);
    if (month !== this.month) {
      this.month = month;
      this.counts.clear();
    }
    const count = (this.counts.get(projectId) ?? 0) + 1;
    this.counts.set(projectId, count);
    return count > this.monthlyLimit;
  }
}
