"""One phase's transmissions turned into tau-Lop jobs: assumption A1 and the chains of sends.

Paper 000, A1: a sequence of transmissions of one rank through the same
channel costs as one transmission of the summed size,
A||T^c(m1) + A||T^c(m2) = A||T^c(m1 + m2). So consecutive sends of a rank
in *sequence* mode on the same channel become one job. A rank's jobs in
sequence mode form a chain (each starts when the previous ends); in
*posted* mode every send is its own job, started at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class PhaseJobs:
    """The jobs of one phase, in chain order (a chain's jobs are consecutive)."""

    src: np.ndarray
    channel: np.ndarray
    domain: np.ndarray
    nbytes: np.ndarray
    chain_next: np.ndarray  # index of the job that starts when this one ends, or -1
    position: np.ndarray  # index of the job inside its chain
    job_of_transmission: np.ndarray  # job index of each transmission of the phase (phase order)

    @property
    def njobs(self) -> int:
        """Number of jobs."""
        return len(self.src)

    @property
    def all_start_together(self) -> bool:
        """True when no job waits for another (every chain has one job)."""
        return bool(np.all(self.chain_next < 0))


def build_jobs(
    src: np.ndarray,
    channel: np.ndarray,
    domain: np.ndarray,
    nbytes: np.ndarray,
    posted: np.ndarray,
    merge_a1: bool = True,
) -> PhaseJobs:
    """Group one phase's transmissions (given in send order per rank) into jobs and chains."""
    n = len(src)
    order = np.lexsort((np.arange(n), src))
    s_src, s_ch, s_post = src[order], channel[order], posted[order]
    new_rank = np.ones(n, dtype=bool)
    new_rank[1:] = s_src[1:] != s_src[:-1]
    new_chain = new_rank | s_post
    new_job = new_chain.copy() if merge_a1 else np.ones(n, dtype=bool)
    new_job[1:] |= s_ch[1:] != s_ch[:-1]
    starts = np.flatnonzero(new_job)
    job_of_sorted = np.cumsum(new_job) - 1
    job_of_transmission = np.empty(n, dtype=np.int64)
    job_of_transmission[order] = job_of_sorted
    job_nbytes = np.add.reduceat(nbytes[order], starts) if n else np.zeros(0)
    chain_start_job = new_chain[starts]
    chain_next = np.arange(1, len(starts) + 1, dtype=np.int64)
    if len(starts):
        chain_next[-1] = -1
        chain_next[:-1][chain_start_job[1:]] = -1
    chain_id = np.cumsum(chain_start_job) - 1
    first_of_chain = np.flatnonzero(chain_start_job)
    position = np.arange(len(starts)) - first_of_chain[chain_id] if len(starts) else np.zeros(0, np.int64)
    return PhaseJobs(
        src=s_src[starts],
        channel=s_ch[starts],
        domain=domain[order][starts],
        nbytes=job_nbytes,
        chain_next=chain_next,
        position=position.astype(np.int64),
        job_of_transmission=job_of_transmission,
    )
