"""Slurm on hosts of a netns_cluster.Cluster: munged, slurmctld on one host, slurmd on the others.

Debian's slurm-wlm (22.05) with a slurm.conf written here: munge authentication through a munged
of our own (its socket, key and logs in `directory`), the controller and every node daemon as
root, processes tracked without cgroups (proctrack/linuxproc, task/none: namespaces are not
containers with a cgroup tree of their own), and job completion records in a text file
(jobcomp/filetxt), which `sacct --completion` reads: accounting proper needs slurmdbd and a MySQL
server.  Each slurmd is its own host (its namespace, its address, its hostname), so several nodes
need no multiple-slurmd build.  Client commands find the cluster through $SLURM_CONF
(`environment`).
"""

import os
import shutil
import subprocess
import time

from netns_cluster import missing_prerequisites

DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "sacct", "sinfo")

SLURM_CONF = """ClusterName=asrkit
SlurmctldHost={controller}({controller_address})
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={directory}/munge.socket
StateSaveLocation={directory}/state
SlurmdSpoolDir={directory}/spool/%n
SlurmctldPidFile={directory}/slurmctld.pid
SlurmdPidFile={directory}/slurmd.%n.pid
SlurmctldLogFile={directory}/slurmctld.log
SlurmdLogFile={directory}/slurmd.%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc={directory}/jobcomp.txt
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
KillWait=2
MinJobAge=30
InactiveLimit=0
SchedulerParameters=sched_min_interval=100000
{nodes}
PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


def missing_slurm():
    """Why a Slurm cluster cannot run here ('' when it can)."""
    reason = missing_prerequisites()
    if reason:
        return reason
    absent = [name for name in DAEMONS if shutil.which(name) is None]
    if absent:
        return f"Slurm is not installed ({', '.join(absent)} missing: apt-get install slurm-wlm munge)"
    return ""


class SlurmHosts:
    """munged and slurmctld on `controller`, slurmd on each of `nodes` (each with `cpus` CPUs)."""

    def __init__(self, cluster, controller, nodes, directory, cpus=2):
        self.cluster = cluster
        self.controller = controller
        self.nodes = list(nodes)
        self.directory = directory
        self.cpus = cpus
        self.conf = os.path.join(directory, "slurm.conf")

    def environment(self, environ=None):
        """`environ` (default: this process's) with SLURM_CONF naming this cluster's configuration."""
        return {**(os.environ if environ is None else environ), "SLURM_CONF": self.conf}

    def start(self, timeout=60.0):
        for sub in ["state", *(os.path.join("spool", node) for node in self.nodes)]:
            os.makedirs(os.path.join(self.directory, sub), exist_ok=True)
        os.chmod(self.directory, 0o755)  # munged insists that its socket's directory is searchable by all
        self._write_conf()
        self._start_munged()
        self._daemon(self.controller, "slurmctld", ["slurmctld", "-D", "-f", self.conf])
        for node in self.nodes:
            self._daemon(node, f"slurmd.{node}", ["slurmd", "-D", "-N", node, "-f", self.conf])
        self.wait_idle(timeout)
        return self

    def _write_conf(self):
        nodes = "\n".join(f"NodeName={node} NodeAddr={self.cluster.address(node)} CPUs={self.cpus} State=UNKNOWN"
                          for node in self.nodes)
        with open(self.conf, "w", encoding="utf-8") as handle:
            handle.write(SLURM_CONF.format(controller=self.controller, directory=self.directory, nodes=nodes,
                                           controller_address=self.cluster.address(self.controller)))

    def _start_munged(self):
        key = os.path.join(self.directory, "munge.key")
        with open(key, "wb") as handle:
            handle.write(os.urandom(1024))
        os.chmod(key, 0o600)
        # --force: munged refuses root without it.  Its socket is a file, so every namespace reaches it.
        self._daemon(self.controller, "munged",
                     ["munged", "-F", "--force", f"--socket={self.directory}/munge.socket", f"--key-file={key}",
                      f"--pid-file={self.directory}/munged.pid", f"--seed-file={self.directory}/munged.seed",
                      f"--log-file={self.directory}/munged.log"])
        deadline = time.monotonic() + 10
        while not os.path.exists(os.path.join(self.directory, "munge.socket")):
            if time.monotonic() > deadline:
                raise TimeoutError(f"munged did not start; see {self.directory}/munged.out")
            time.sleep(0.05)

    def _daemon(self, host, name, argv):
        with open(os.path.join(self.directory, f"{name}.out"), "ab") as output:
            self.cluster.popen(host, argv, stdout=output, stderr=output, stdin=subprocess.DEVNULL)

    def run(self, argv, host=None, **kwargs):
        """A Slurm client command (sinfo, squeue, sacct...) on `host` (default: the controller's)."""
        return self.cluster.run(host or self.controller, argv, env=self.environment(), capture_output=True,
                                text=True, **kwargs)

    def completions(self, array_job_id):
        """{array task: (state, exit code)} of the job's finished tasks, from the job completion file.

        `sacct --completion` reads the same file but names array tasks by their raw job ids only.
        """
        path = os.path.join(self.directory, "jobcomp.txt")
        records = {}
        if os.path.exists(path):
            with open(path, encoding="utf-8") as handle:
                for line in handle:
                    fields = dict(field.split("=", 1) for field in line.split() if "=" in field)
                    if fields.get("ArrayJobId") == str(array_job_id):
                        records[int(fields["ArrayTaskId"])] = (fields["JobState"], fields["ExitCode"])
        return records

    def node_states(self):
        """{node: state} as sinfo reports them."""
        result = self.run(["sinfo", "--noheader", "--Node", "--format=%N %T"])
        return dict(line.split()[:2] for line in result.stdout.splitlines() if line.strip())

    def wait_idle(self, timeout=60.0):
        """Return once every node is idle (registered with the controller, no job)."""
        deadline = time.monotonic() + timeout
        while True:
            states = self.node_states()
            if states and all(states.get(node) == "idle" for node in self.nodes):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"Slurm nodes not idle within {timeout} s: {states}; see the logs in "
                                   f"{self.directory}")
            time.sleep(0.2)
