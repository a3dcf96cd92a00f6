/* syno/cpus.h - how many CPUs this process may run on.
 *
 *   syno_cpu_count  the CPUs in the process's affinity mask (so `taskset -c 1 syno ...` and a
 *                   cgroup's cpuset count as what they allow), else the online CPUs; at least 1.
 *                   Every default thread count and every share of CPUs among workers starts
 *                   from it.
 */
#ifndef SYNO_CPUS_H
#define SYNO_CPUS_H

int syno_cpu_count(void);

#endif
