"""engagement's daily publish as an Airflow 3 DAG.

Each run publishes the event dates that end the day before its logical date
(`engagement_restate_days` of them, so late events are restated), then waits
until readers see the newest one. Set it to restatementHorizonDays (3 in
production): the horizon counts back from yesterday (today's partition is still
being written), so each date is restated once more after its last lateness
partition has ended, and one date more would fall outside it (exit 2).

* The job id is `{{ ts_nodash }}-try{{ ti.try_number }}-{{ ti.id }}`: every try
  gets a new one, as engagement requires (a published id exits 4, an id with an
  earlier attempt's staging exits 2), also in a run made again for the same
  logical date, whose try numbers start at 1 again.
* Exit 1 (and a signal, 130, 143 or 129) is retried: the pointer did not move and
  a retry with a new job id is safe. Exits 2, 3, 4 and 6 fail the task at once,
  with no retry: a bad command, a gate rejection or a published job id gets
  the same answer however often it is tried, and a retry after a rollback
  that came first (6) would publish over it.
* The sensor runs `engagement status --date D`: exit 5 means D is not
  published yet (poke again), 0 that readers see it; 2 (a wrong warehouse or
  flag) fails at once; 1 (the pointer could not be read) and a signal are
  retried, as for publish.

Settings are Airflow Variables (or AIRFLOW_VAR_<NAME> environment variables):
engagement_bin (default `engagement` on PATH), engagement_config (required),
engagement_warehouse (required), engagement_restate_days (default 3), and the
pins engagement_manifest_id and engagement_enrollment_snapshot_id (passed as
--manifest-id and --enrollment-snapshot-id when set; else the config's, and
config/production.conf sets none, so set both there or every run is exit 2). Any
other flag can be set on the worker as ENGAGEMENT_<FLAG>, which engagement
reads itself (ENGAGEMENT_RAW, ENGAGEMENT_ENGINE, ...). The sensor's
`engagement status` reads no config: S3 addressing the config sets
(engagement.s3PathStyle) must be set on the worker as ENGAGEMENT_S3_PATH_STYLE
too, or the sensor cannot reach a warehouse the publish wrote. A required
Variable missing, a restate-days value that is not a whole number from 1, or
no engagement binary fails the task at once: no retry mends them.
"""

import datetime
import os
import subprocess

from airflow.sdk import Variable, dag, task
from airflow.sdk.exceptions import AirflowFailException

# engagement's exit codes that no retry can change (README, exit codes).
FAIL_FAST = {
    2: "usage: fix the command, config or date list; nothing was published",
    3: "the gate rejected the attempt; see rejections/job_id=<id>.json; fix the input, do not raise the cap",
    4: "the job id is already published",
    6: "an operator's rollback of one of the dates landed while it ran; a retry would publish over it: see engagement history --date D",
}
NOT_PUBLISHED = 5  # status --date: the date is not published (yet)
PINS = {"--manifest-id": "engagement_manifest_id", "--enrollment-snapshot-id": "engagement_enrollment_snapshot_id"}

# Read when the DAG is parsed; the tests shorten them.
RETRY_DELAY = datetime.timedelta(seconds=int(os.environ.get("ENGAGEMENT_DAG_RETRY_DELAY_SECONDS", "300")))
POKE_INTERVAL = int(os.environ.get("ENGAGEMENT_DAG_POKE_SECONDS", "300"))


def required(name):
    """A Variable the DAG cannot run without: missing, the task fails at once."""
    value = Variable.get(name, default=None)
    if not value:
        raise AirflowFailException(f"Airflow Variable {name} is not set: the DAG needs it (see the DAG's docstring)")
    return value


def engagement(*args):
    """Run the engagement binary; its stdout and stderr go to the task log."""
    cmd = [Variable.get("engagement_bin", default="engagement"), *args]
    print("running:", " ".join(cmd), flush=True)
    try:
        return subprocess.run(cmd, check=False).returncode
    except (FileNotFoundError, PermissionError) as err:
        raise AirflowFailException(f"engagement binary {cmd[0]}: {err} (Variable engagement_bin)") from err


def event_dates(ds):
    """The restated event dates: the N days before the logical date, oldest first."""
    raw = Variable.get("engagement_restate_days", default="3")
    try:
        n = int(raw)
    except ValueError:
        n = 0
    if n < 1:
        # An empty --dates is a gate rejection (exit 3), not what was meant.
        raise AirflowFailException(f"Airflow Variable engagement_restate_days {raw!r}: want a whole number from 1")
    day = datetime.date.fromisoformat(ds)
    return [(day - datetime.timedelta(days=i)).isoformat() for i in range(n, 0, -1)]


@dag(
    schedule="0 6 * * *",
    start_date=datetime.datetime(2026, 3, 1, tzinfo=datetime.timezone.utc),
    catchup=False,
    max_active_runs=1,  # two runs would race for the same dates
    default_args={"retries": 2, "retry_delay": RETRY_DELAY},
    tags=["engagement"],
)
def engagement_daily():
    @task
    def publish(job_id, ds=None):
        dates = event_dates(ds)
        args = [
            "publish",
            "--config", required("engagement_config"),
            "--warehouse", required("engagement_warehouse"),
            "--job-id", job_id,
            "--dates", ",".join(dates),
            # freshness is judged as of the run's own date, so a rerun of an
            # old run is not refused as stale for the days since
            "--as-of", ds,
        ]
        for flag, name in PINS.items():
            pin = Variable.get(name, default=None)
            if pin:
                args += [flag, pin]
        code = engagement(*args)
        if code in FAIL_FAST:
            raise AirflowFailException(f"engagement publish exited {code}: {FAIL_FAST[code]}")
        if code != 0:
            raise RuntimeError(f"engagement publish exited {code}; the pointer did not move, retrying with a new job id")

    # The newest date a run publishes is the day before its logical date; a
    # consumer's DAG can copy this task as it is to wait for that date.
    @task.sensor(poke_interval=POKE_INTERVAL, timeout=6 * 3600, mode="reschedule")
    def published(ds=None):
        newest = event_dates(ds)[-1]
        code = engagement("status", "--warehouse", required("engagement_warehouse"), "--date", newest)
        if code == NOT_PUBLISHED:
            return False
        if code == 2:
            raise AirflowFailException("engagement status exited 2: " + FAIL_FAST[2])
        if code != 0:
            # A store that could not be read for a moment must not fail a
            # wait of hours: the try is retried.
            raise RuntimeError(f"engagement status exited {code}; retrying")
        return True

    # The try number alone repeats when a run is made again for the same
    # logical date (`airflow dags test`, a run deleted and triggered again, a
    # restored metadata database): try_number starts at 1 in every new task
    # instance, and the id engagement already holds failed the run (exit 4).
    # The task instance's id is new on every try.
    publish("{{ ts_nodash }}-try{{ ti.try_number }}-{{ ti.id }}") >> published()


engagement_daily()
