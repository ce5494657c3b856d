"""Reversals: a later memory taking back an earlier one, and look-alikes that do not."""

from __future__ import annotations

import pytest

from hippocampus.extract.dedup import DedupConfig, Verdict, compare
from hippocampus.extract.reversal import read, reversal

# (earlier, later): the later one takes the earlier one back.
REVERSALS = [
    (
        "Use Redis for session storage because it is fast",
        "Do not use Redis for session storage: evictions log users out",
    ),
    (
        "No deploys on Friday: the freeze starts after the June payments outage",
        "The Friday deploy freeze is lifted",
    ),
    (
        "We use Jenkins for CI",
        "We switched from Jenkins to GitHub Actions",
    ),
    (
        "Run the nightly backfill job at 2am",
        "Stop running the nightly backfill job: the new pipeline streams the data",
    ),
    (
        "We store uploads on the NFS share",
        "We no longer store uploads on the NFS share; they go to S3",
    ),
    (
        "Use Moment.js for date formatting in the web app",
        "Use date-fns instead of Moment.js for date formatting",
    ),
    (
        "Deploy the API with Heroku",
        "We moved the API from Heroku to Fly.io",
    ),
    (
        "Log in to the staging database with the shared admin account",
        "Never use the shared admin account for the staging database",
    ),
    (
        "Cache product prices in Memcached",
        "Don't cache product prices: they change every minute",
    ),
    (
        "Use connection pooling for the billing database",
        "Don't use connection pooling for the billing database",
    ),
    (
        "Code reviews need two approvals",
        "Code reviews no longer need two approvals; one is enough",
    ),
    (
        "The on-call rotation is weekly",
        "The on-call rotation switched from weekly to biweekly",
    ),
    (
        "Feature flags are managed in LaunchDarkly",
        "We replaced LaunchDarkly with Unleash for feature flags",
    ),
    (
        "Allow merges to main without CI on hotfixes",
        "Merges to main without CI are not allowed, even for hotfixes",
    ),
    (
        "Friday deploys are allowed",
        "Friday deploys are not allowed after the outage",
    ),
    (
        "Send the weekly report to the whole team",
        "Do not send the weekly report to the whole team anymore, only to leads",
    ),
    (
        "We use MongoDB for the event store",
        "We migrated the event store from MongoDB to Postgres",
    ),
    (
        "The API rate limit is enforced per user",
        "The API rate limit is no longer enforced per user but per key",
    ),
    (
        "Ship the mobile app through TestFlight for beta testers",
        "We stopped shipping beta builds through TestFlight",
    ),
    (
        "Always squash commits when merging",
        "Don't squash commits when merging: we want the history",
    ),
    (
        "Use Terraform for the AWS infrastructure",
        "Use Pulumi instead of Terraform for the AWS infrastructure",
    ),
    (
        "Write integration tests against a real Postgres in Docker",
        "Stop using Docker for the integration test database; use the shared test cluster",
    ),
    (
        "There is a hiring freeze on the platform team",
        "The hiring freeze on the platform team has been lifted",
    ),
    (
        "Customer exports are disabled during the migration",
        "Customer exports are enabled again now the migration is done",
    ),
    (
        "Maria owns the billing service",
        "Maria no longer owns the billing service; Tom took it over",
    ),
    (
        "Use the v1 payments API",
        "The v1 payments API is deprecated: use v2",
    ),
    (
        "Kubernetes cron jobs run the report generation",
        "Report generation moved off Kubernetes cron jobs to Airflow",
    ),
    (
        "Slack is the place for incident updates",
        "Incident updates are not posted in Slack anymore; use the status page",
    ),
    (
        "Don't use Redis for sessions: evictions log users out",
        "Use Redis for sessions again: we moved them to an instance with noeviction",
    ),
    (
        "Redis is thread-safe here",
        "Redis is not thread-safe here",
    ),
    (
        "We switched from Jenkins to GitHub Actions",
        "We switched from GitHub Actions back to Jenkins",
    ),
    (
        "Deploys are frozen on Fridays",
        "Friday deploys are allowed again",
    ),
]

# Near-duplicates and paraphrases: alike, and neither takes the other back.
AGREEING = [
    (
        "Use Redis for session storage because it is fast",
        "Redis is what we use for session storage, since it's fast",
    ),
    (
        "No deploys on Friday",
        "Never deploy on Fridays",
    ),
    (
        "Do not use Redis for session storage",
        "Don't store sessions in Redis",
    ),
    (
        "We switched from Jenkins to GitHub Actions",
        "CI moved from Jenkins to GitHub Actions last year",
    ),
    (
        "Don't forget to restart the worker after a deploy",
        "Restart the worker after a deploy",
    ),
    (
        "Not only the API but also the worker needs the new certificate",
        "The API and the worker need the new certificate",
    ),
    (
        "Use Postgres for the event store, not MongoDB",
        "Use Postgres for the event store",
    ),
    (
        "The cache has no TTL, so entries never expire",
        "Cache entries never expire because there is no TTL",
    ),
    (
        "Restart the worker if the queue stalls",
        "If the queue stalls, restart the worker; no need to page anyone",
    ),
    (
        "The build fails without the NODE_ENV variable",
        "Without NODE_ENV set, the build fails",
    ),
    (
        "Tests run in parallel on CI",
        "CI runs the tests in parallel, which cut the time in half",
    ),
    (
        "We use GitHub Actions instead of Jenkins",
        "GitHub Actions replaced Jenkins for our CI",
    ),
    (
        "The deploy freeze is lifted",
        "Deploy freeze lifted, ship away",
    ),
    (
        "No one should push to main directly",
        "Nobody pushes straight to main",
    ),
    (
        "Do not deploy on Friday afternoons",
        "Deploying on Friday afternoons is not allowed",
    ),
    (
        "I'm not sure whether to use Redis or Memcached for sessions",
        "Use Redis for sessions",
    ),
    (
        "Can we deploy on Friday?",
        "Deploy on Fridays is fine",
    ),
    (
        "Make sure the backup job doesn't overlap with the nightly ETL",
        "The backup job must not overlap the nightly ETL",
    ),
    (
        "Switch the logger from JSON to plain text in development",
        "In development, the logger switches from JSON to plain text",
    ),
    (
        "Never commit secrets to the repo; use the vault",
        "Secrets go in the vault, never in the repo",
    ),
    (
        "The cache is not the problem; the network is",
        "The network is the problem, not the cache",
    ),
    (
        "Fixed the crash by removing the retry loop",
        "The retry loop caused the crash; removing it fixed it",
    ),
    (
        "The crash stopped after we removed the retry loop",
        "The retry loop causes the crash",
    ),
    (
        "Use Postgres for the event store, not MongoDB",
        "MongoDB holds the audit log",
    ),
    (
        "Do not use Redis for sessions",
        "Redis is our cache for product pages",
    ),
    (
        "Retry at most 3 times, no more than that",
        "Retry up to 3 times",
    ),
    (
        "Keep retries to no more than 3",
        "Retry up to 3 times",
    ),
    (
        "Don't hesitate to page the on-call for a sev1",
        "Page the on-call for any sev1",
    ),
    (
        "We stopped at the cafe after the meeting",
        "The cafe near the office is good",
    ),
]


@pytest.mark.parametrize(("earlier", "later"), REVERSALS)
def test_a_reversal_is_found_both_ways(earlier: str, later: str) -> None:
    assert reversal(later, earlier)
    assert reversal(earlier, later)


@pytest.mark.parametrize(("earlier", "later"), AGREEING)
def test_alike_texts_that_agree_are_no_reversal(earlier: str, later: str) -> None:
    assert reversal(later, earlier) == frozenset()


@pytest.mark.parametrize(("earlier", "later"), REVERSALS)
def test_a_reversal_is_a_conflict_however_far_apart_the_vectors(earlier: str, later: str) -> None:
    assert compare(later, earlier, 0.4, DedupConfig()).verdict == Verdict.CONFLICT


def test_the_contested_words_are_what_was_taken_back() -> None:
    assert reversal(
        "Do not use Redis for session storage: evictions log users out",
        "Use Redis for session storage because it is fast",
    ) == {"redis", "session", "storag"}
    # Stemmed words, as lexical search has them.
    assert reversal("We switched from Jenkins to GitHub Actions", "We use Jenkins for CI") == {
        "jenkin"
    }


def test_a_lifted_restriction_reads_as_allowed_and_the_restriction_as_denied() -> None:
    freeze = read("There is a deploy freeze on Fridays")
    lifted = read("The Friday deploy freeze is lifted")
    assert {"deploy", "friday"} <= freeze.negative and not freeze.positive
    assert {"deploy", "friday"} <= lifted.positive and not lifted.negative


def test_questions_and_conditions_assert_nothing() -> None:
    assert read("Can we deploy on Friday? Should we not?").terms == frozenset()
    assert read("If you don't restart the worker, jobs pile up").negative == frozenset()


def test_a_speaker_label_is_not_a_shared_subject() -> None:
    # Alone, "jenkins" is one shared word: too little for a plain negation.
    assert not reversal("User: I don't like Jenkins", "User: Jenkins is on the old server")


def test_a_word_denied_in_passing_is_no_reversal_of_a_text_that_names_it() -> None:
    # The shared word sits in clauses about different things.
    assert not reversal(
        "The theme plays over the Man with No Name, and the score was released in 1966.",
        "The score of the film of the same name was released in 1966 and composed by Morricone.",
    )
    # A discontinuation names its subject alone only against a clause about it.
    assert not reversal(
        "We switched from Jenkins to GitHub Actions",
        "The Jenkins agents on the old rack were patched by the platform team last spring",
    )
