/* Running another program without a shell (see syno/proc.h). */
#include "syno/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

bool syno_proc_on_path(const char *name) {
  const char *path = getenv("PATH");
  if (!name || !*name) return false;
  if (strchr(name, '/')) {
    struct stat st;
    return stat(name, &st) == 0 && S_ISREG(st.st_mode) && access(name, X_OK) == 0;
  }
  if (!path) return false;
  char dir[4096];
  while (*path) {
    size_t n = strcspn(path, ":");
    if (n > 0 && n + strlen(name) + 2 < sizeof dir) {
      snprintf(dir, sizeof dir, "%.*s/%s", (int)n, path, name);
      struct stat st;
      if (stat(dir, &st) == 0 && S_ISREG(st.st_mode) && access(dir, X_OK) == 0) return true;
    }
    path += n;
    if (*path == ':') path++;
  }
  return false;
}

int syno_proc_run(const char *const *argv, const char *cwd, const char *in, size_t in_len, const char *log,
                  const int *out, syno_error_t *err) {
  int fd[2] = {-1, -1};
  if (in && pipe(fd)) return syno_error_set(err, "cannot run %s: pipe: %s", argv[0], strerror(errno));
  int logfd = open(log ? log : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (logfd < 0) {
    int e = errno;
    if (in) close(fd[0]), close(fd[1]);
    return syno_error_set(err, "cannot run %s: %s: %s", argv[0], log ? log : "/dev/null", strerror(e));
  }
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    if (in) close(fd[0]), close(fd[1]);
    close(logfd);
    return syno_error_set(err, "cannot run %s: fork: %s", argv[0], strerror(e));
  }
  if (pid == 0) {
    int null = open("/dev/null", O_RDONLY);
    dup2(in ? fd[0] : null, STDIN_FILENO);
    dup2(out ? *out : logfd, STDOUT_FILENO);
    dup2(logfd, STDERR_FILENO);
    if (in) close(fd[0]), close(fd[1]);
    if (cwd && chdir(cwd)) _exit(126);
    execvp(argv[0], (char *const *)argv);
    _exit(127);
  }
  close(logfd);
  int rc = 0;
  if (in) {
    close(fd[0]);
    /* A program that stops reading must not kill us with SIGPIPE. */
    struct sigaction ign = {.sa_handler = SIG_IGN}, old;
    sigaction(SIGPIPE, &ign, &old);
    for (size_t done = 0; done < in_len;) {
      ssize_t w = write(fd[1], in + done, in_len - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) break;
      done += (size_t)w;
    }
    close(fd[1]);
    sigaction(SIGPIPE, &old, NULL);
  }
  int st = 0;
  while (waitpid(pid, &st, 0) < 0) {
    if (errno != EINTR) return syno_error_set(err, "cannot run %s: waitpid: %s", argv[0], strerror(errno));
  }
  rc = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
  return rc;
}
