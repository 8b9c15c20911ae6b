import type { GroupCommitInfo, GroupCommitListener } from './observe.js';

/** The listeners of a writer's committed groups (Store.onGroupCommit); a listener that throws is ignored. */
export class GroupCommitListeners {
  private list: GroupCommitListener[] = [];

  add(listener: GroupCommitListener): () => void {
    this.list = [...this.list, listener];
    return () => {
      this.list = this.list.filter((l) => l !== listener);
    };
  }

  /** Whether anyone listens (writers skip measuring when no one does). */
  get active(): boolean {
    return this.list.length > 0;
  }

  emit(info: GroupCommitInfo): void {
    for (const l of this.list) {
      try {
        l(info);
      } catch {
        // an observer never breaks a commit
      }
    }
  }
}
