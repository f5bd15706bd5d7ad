#!/usr/bin/env python3
"""The official Python Kubernetes client (Debian's python3-kubernetes) against commgate-sim.

Run by sim_python_client_test (tests/sim/python_client_test.cpp), which starts the sim and
passes its kubeconfig. Each check drives the client as a user would and compares what it
gets with what kube-apiserver answers; any difference is a named failure, and the script
exits non-zero. The last line is "python_client_check: N passed, M failed".

  python3 tests/sim/python_client_check.py --kubeconfig K --crd crds/trainingjobs.commgate.io.yaml
"""

import argparse
import datetime
import json
import os
import sys
import threading
import time
import traceback

import yaml
from kubernetes import client, config, dynamic, watch
from kubernetes.client.rest import ApiException

GROUP, VERSION, PLURAL = "commgate.io", "v1alpha1", "trainingjobs"
NS = "py-client"


class Mismatch(Exception):
    """The sim answered differently from kube-apiserver."""


def expect(condition, message):
    if not condition:
        raise Mismatch(message)


def expect_eq(got, want, what):
    if got != want:
        raise Mismatch("%s: got %r, want %r" % (what, got, want))


def expect_api_error(what, status, reason, fn, *args, **kwargs):
    """Calls fn and expects an ApiException with this HTTP status and a Status body with
    this reason, as the client raises for kube-apiserver's errors. Returns the body."""
    try:
        fn(*args, **kwargs)
    except ApiException as e:
        expect_eq(e.status, status, what + ": ApiException.status")
        try:
            body = json.loads(e.body)
        except (TypeError, ValueError):
            raise Mismatch("%s: the error body is not JSON: %r" % (what, e.body))
        expect_eq(body.get("kind"), "Status", what + ": body.kind")
        expect_eq(body.get("status"), "Failure", what + ": body.status")
        expect_eq(body.get("code"), status, what + ": body.code")
        expect_eq(body.get("reason"), reason, what + ": body.reason")
        return body
    raise Mismatch("%s: no ApiException, want %d %s" % (what, status, reason))


def wait_for(what, condition, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise Mismatch("%s: not within %.0f s" % (what, timeout))


def training_job(name, nodes=2, labels=None):
    return {
        "apiVersion": GROUP + "/" + VERSION,
        "kind": "TrainingJob",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {
            "numNodes": nodes,
            "model": {"parameters": "5M"},
            "template": {"spec": {"containers": [{"name": "trainer", "image": "train:1"}]}},
        },
    }


def now_micro():
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=123456)


def micro_time(when):
    """metav1.MicroTime as kube-apiserver writes it: UTC, six digits, "Z"."""
    return when.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def raw(call, *args, **kwargs):
    """The JSON the server sent, not the client's model of it."""
    return json.loads(call(*args, _preload_content=False, **kwargs).data)


class Cluster:
    """The clients, built from the sim's kubeconfig as a user builds them."""

    def __init__(self, kubeconfig, work_dir):
        self.api = config.new_client_from_config(config_file=kubeconfig)
        self.work_dir = work_dir
        self.core = client.CoreV1Api(self.api)
        self.custom = client.CustomObjectsApi(self.api)
        self.batch = client.BatchV1Api(self.api)
        self.coordination = client.CoordinationV1Api(self.api)
        self.events = client.EventsV1Api(self.api)
        self.crds = client.ApiextensionsV1Api(self.api)

    def tj(self, method, *args, **kwargs):
        """A CustomObjectsApi call on TrainingJobs in the test namespace."""
        fn = getattr(self.custom, method)
        return fn(GROUP, VERSION, NS, PLURAL, *args, **kwargs)

    def sim_fault(self, spec):
        """POST /sim/faults (the sim's own endpoint, docs/testing.md)."""
        self.api.call_api("/sim/faults", "POST", body=spec, auth_settings=["BearerToken"],
                          response_type="object", _return_http_data_only=True)


CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


@check
def install_crd_and_namespace(c, args):
    with open(args.crd) as f:
        crd = yaml.safe_load(f)
    created = c.crds.create_custom_resource_definition(crd)
    expect_eq(created.metadata.name, "trainingjobs.commgate.io", "CRD name")

    def established():
        got = c.crds.read_custom_resource_definition("trainingjobs.commgate.io")
        conditions = (got.status and got.status.conditions) or []
        return any(x.type == "Established" and x.status == "True" for x in conditions)

    wait_for("CRD Established", established)
    ns = c.core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NS)))
    expect_eq(ns.metadata.name, NS, "namespace name")
    expect_eq(ns.status.phase, "Active", "namespace status.phase")


@check
def version_and_discovery(c, args):
    # VersionApi asks for /version/ (with the slash).
    version = client.VersionApi(c.api).get_code()
    expect(version.major and version.minor, "version major/minor empty: %r" % version)
    expect(version.git_version.startswith("v"), "git_version %r" % version.git_version)
    expect("v1" in client.CoreApi(c.api).get_api_versions().versions, "/api lacks v1")
    groups = {g.name: g for g in client.ApisApi(c.api).get_api_versions().groups}
    for name in ("batch", "coordination.k8s.io", "events.k8s.io", "apiextensions.k8s.io",
                 GROUP):
        expect(name in groups, "/apis lacks group %s: %s" % (name, sorted(groups)))
    expect_eq(groups[GROUP].preferred_version.version, VERSION, "commgate.io preferred version")
    core = {r.name for r in c.core.get_api_resources().resources}
    for name in ("namespaces", "pods", "services", "events", "pods/status"):
        expect(name in core, "/api/v1 lacks %s" % name)
    batch = {r.name: r for r in c.batch.get_api_resources().resources}
    expect("jobs" in batch and batch["jobs"].namespaced, "/apis/batch/v1 jobs")
    expect_eq(batch["jobs"].kind, "Job", "jobs kind")
    # The dynamic client discovers everything itself (and caches it in a file).
    dyn = dynamic.DynamicClient(c.api, cache_file=os.path.join(c.work_dir, "discovery.json"))
    tj = dyn.resources.get(api_version=GROUP + "/" + VERSION, kind="TrainingJob")
    expect(tj.namespaced, "TrainingJob not namespaced in discovery")
    expect_eq(tj.name, PLURAL, "TrainingJob plural")
    expect("tj" in (tj.short_names or []), "TrainingJob shortNames %r" % tj.short_names)
    expect("scale" in tj.subresources and "status" in tj.subresources,
           "TrainingJob subresources %r" % list(tj.subresources))


@check
def trainingjob_crud(c, args):
    created = c.tj("create_namespaced_custom_object", training_job("crud"))
    meta = created["metadata"]
    expect(meta.get("uid") and meta.get("resourceVersion"), "create: uid/resourceVersion")
    expect_eq(meta.get("generation"), 1, "create: generation")
    expect_eq(meta.get("namespace"), NS, "create: namespace")
    expect_eq(created["spec"].get("numProcPerNode"), 1, "create: schema default numProcPerNode")
    body = expect_api_error("create twice", 409, "AlreadyExists", c.tj,
                            "create_namespaced_custom_object", training_job("crud"))
    expect_eq(body.get("details", {}).get("name"), "crud", "AlreadyExists details.name")
    expect_eq(body.get("details", {}).get("group"), GROUP, "AlreadyExists details.group")
    expect_eq(body.get("details", {}).get("kind"), PLURAL, "AlreadyExists details.kind")

    got = c.tj("get_namespaced_custom_object", "crud")
    expect_eq(got["metadata"]["uid"], meta["uid"], "get: uid")

    stale = json.loads(json.dumps(got))
    got["spec"]["numNodes"] = 3
    replaced = c.tj("replace_namespaced_custom_object", "crud", got)
    expect_eq(replaced["spec"]["numNodes"], 3, "replace: spec.numNodes")
    expect_eq(replaced["metadata"]["generation"], 2, "replace: generation")
    stale["spec"]["numNodes"] = 4
    body = expect_api_error("replace from a stale resourceVersion", 409, "Conflict", c.tj,
                            "replace_namespaced_custom_object", "crud", stale)
    expect("the object has been modified" in body.get("message", ""),
           "Conflict message: %r" % body.get("message"))
    del stale["metadata"]["resourceVersion"]
    expect_api_error("replace without resourceVersion", 422, "Invalid", c.tj,
                     "replace_namespaced_custom_object", "crud", stale)

    body = expect_api_error("create numNodes 0", 422, "Invalid", c.tj,
                            "create_namespaced_custom_object", training_job("zero", nodes=0))
    causes = body.get("details", {}).get("causes", [])
    # The schema's minimum, then the CRD's CEL rule (minNodes defaults to 1), as upstream.
    expect([x.get("field") for x in causes] == ["spec.numNodes", "spec"], "422 causes: %r" % causes)
    body = expect_api_error("get a missing one", 404, "NotFound", c.tj,
                            "get_namespaced_custom_object", "nope")
    expect_eq(body.get("message"), 'trainingjobs.commgate.io "nope" not found', "404 message")

    # Upstream answers a delete that removes a custom resource at once with a Success
    # Status naming it (its storage does not set ReturnDeletedObject).
    deleted = c.tj("delete_namespaced_custom_object", "crud")
    expect_eq((deleted.get("kind"), deleted.get("status")), ("Status", "Success"),
              "delete answer")
    expect_eq(deleted.get("details"),
              {"name": "crud", "group": GROUP, "kind": PLURAL, "uid": meta["uid"]},
              "delete answer details")
    expect_api_error("get after delete", 404, "NotFound", c.tj,
                     "get_namespaced_custom_object", "crud")
    expect_api_error("delete twice", 404, "NotFound", c.tj,
                     "delete_namespaced_custom_object", "crud")


@check
def merge_json_and_status_patches(c, args):
    c.tj("create_namespaced_custom_object", training_job("patched"))
    merged = c.tj("patch_namespaced_custom_object", "patched",
                  {"metadata": {"labels": {"team": "vision"}}, "spec": {"numNodes": 3},
                   "status": {"phase": "Running"}})
    expect_eq(merged["metadata"]["labels"], {"team": "vision"}, "merge patch: labels")
    expect_eq(merged["spec"]["numNodes"], 3, "merge patch: spec.numNodes")
    expect_eq(merged["metadata"]["generation"], 2, "merge patch: generation")
    expect("status" not in merged, "merge patch of the main resource wrote status: %r"
           % merged.get("status"))

    # CustomObjectsApi sends every patch as a merge patch; the dynamic client lets the
    # caller pick application/json-patch+json.
    dyn = dynamic.DynamicClient(c.api, cache_file=os.path.join(c.work_dir, "discovery.json"))
    tjs = dyn.resources.get(api_version=GROUP + "/" + VERSION, kind="TrainingJob")
    patched = tjs.patch(name="patched", namespace=NS,
                        body=[{"op": "test", "path": "/spec/numNodes", "value": 3},
                              {"op": "replace", "path": "/spec/numNodes", "value": 4}],
                        content_type="application/json-patch+json")
    expect_eq(patched.spec.numNodes, 4, "JSON patch: spec.numNodes")
    expect_api_error("JSON patch whose test fails", 422, "Invalid", tjs.patch, name="patched",
                     namespace=NS, body=[{"op": "test", "path": "/spec/numNodes", "value": 9}],
                     content_type="application/json-patch+json")

    status = c.tj("patch_namespaced_custom_object_status", "patched",
                  {"status": {"phase": "Running", "admittedNodes": 4},
                   "spec": {"numNodes": 7}})
    expect_eq(status["status"], {"phase": "Running", "admittedNodes": 4}, "status patch")
    expect_eq(status["spec"]["numNodes"], 4, "status patch changed spec")
    expect_eq(status["metadata"]["generation"], 3, "status patch: generation")
    expect_api_error("status patch outside the schema's enum", 422, "Invalid", c.tj,
                     "patch_namespaced_custom_object_status", "patched",
                     {"status": {"phase": "Sleeping"}})


@check
def scale_subresource(c, args):
    c.tj("create_namespaced_custom_object", training_job("scaled", nodes=2))
    c.tj("patch_namespaced_custom_object_status", "scaled", {"status": {"admittedNodes": 2}})
    scale = c.tj("get_namespaced_custom_object_scale", "scaled")
    expect_eq((scale.get("apiVersion"), scale.get("kind")), ("autoscaling/v1", "Scale"),
              "scale kind")
    expect_eq(scale["spec"].get("replicas"), 2, "scale spec.replicas")
    expect_eq(scale["status"].get("replicas"), 2, "scale status.replicas")
    patched = c.tj("patch_namespaced_custom_object_scale", "scaled", {"spec": {"replicas": 5}})
    expect_eq(patched["spec"]["replicas"], 5, "scale patch")
    expect_eq(c.tj("get_namespaced_custom_object", "scaled")["spec"]["numNodes"], 5,
              "scale patch wrote spec.numNodes")
    scale = c.tj("get_namespaced_custom_object_scale", "scaled")
    stale = json.loads(json.dumps(scale))
    scale["spec"]["replicas"] = 6
    replaced = c.tj("replace_namespaced_custom_object_scale", "scaled", scale)
    expect_eq(replaced["spec"]["replicas"], 6, "scale replace")
    stale["spec"]["replicas"] = 1
    expect_api_error("scale replace from a stale resourceVersion", 409, "Conflict", c.tj,
                     "replace_namespaced_custom_object_scale", "scaled", stale)


@check
def label_and_field_selectors(c, args):
    for name, team in (("sel-a", "vision"), ("sel-b", "vision"), ("sel-c", "nlp")):
        c.tj("create_namespaced_custom_object",
             training_job(name, labels={"team": team, "selector-test": "yes"}))

    def names(**kwargs):
        items = c.tj("list_namespaced_custom_object", **kwargs)["items"]
        return sorted(x["metadata"]["name"] for x in items)

    expect_eq(names(label_selector="selector-test=yes,team=vision"), ["sel-a", "sel-b"],
              "label selector team=vision")
    expect_eq(names(label_selector="selector-test,team in (nlp)"), ["sel-c"],
              "label selector team in (nlp)")
    expect_eq(names(label_selector="selector-test,team!=vision"), ["sel-c"],
              "label selector team!=vision")
    expect_eq(names(field_selector="metadata.name=sel-b"), ["sel-b"],
              "field selector metadata.name")
    expect_eq(names(label_selector="selector-test", field_selector="metadata.name!=sel-a"),
              ["sel-b", "sel-c"], "label and field selector together")
    expect_api_error("a malformed label selector", 400, "BadRequest", c.tj,
                     "list_namespaced_custom_object", label_selector="team in vision")
    everywhere = c.custom.list_cluster_custom_object(GROUP, VERSION, PLURAL,
                                                     label_selector="team=nlp")
    expect_eq([x["metadata"]["name"] for x in everywhere["items"]], ["sel-c"],
              "cluster-wide list with a label selector")


@check
def paging_with_limit_and_continue(c, args):
    ns = "py-paging"
    c.core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
    for i in range(5):
        c.custom.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL,
                                                 training_job("page-%d" % i))
    seen, pages, token = [], 0, None
    while True:
        kwargs = {"limit": 2}
        if token:
            kwargs["_continue"] = token
        page = c.custom.list_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, **kwargs)
        pages += 1
        expect(len(page["items"]) <= 2, "page of %d items with limit 2" % len(page["items"]))
        seen += [x["metadata"]["name"] for x in page["items"]]
        if pages == 1:
            expect_eq(page["metadata"].get("remainingItemCount"), 3,
                      "first page metadata.remainingItemCount")
        token = page["metadata"].get("continue")
        if not token:
            break
        expect(pages < 10, "paging does not end")
    expect_eq(sorted(seen), ["page-%d" % i for i in range(5)], "names over all pages")
    expect_eq(pages, 3, "pages of 2 for 5 objects")
    expect_api_error("a limit that is not a number", 400, "BadRequest", c.api.call_api,
                     "/apis/%s/%s/namespaces/%s/%s" % (GROUP, VERSION, ns, PLURAL), "GET",
                     query_params=[("limit", "two")], auth_settings=["BearerToken"],
                     response_type="object")
    expect_api_error("a malformed continue token", 400, "BadRequest",
                     c.custom.list_namespaced_custom_object, GROUP, VERSION, ns, PLURAL,
                     limit=2, _continue="not-a-token")
    # Typed lists page the same way.
    typed = c.custom.list_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, limit=4)
    expect_eq(len(typed["items"]), 4, "limit 4")


def collect(stream_fn, stop_when, timeout_seconds, **kwargs):
    """Runs watch.Watch().stream in a thread; returns (events, thread, watcher)."""
    w = watch.Watch()
    events = []
    errors = []

    def run():
        try:
            for event in w.stream(stream_fn, timeout_seconds=timeout_seconds, **kwargs):
                events.append(event)
                if stop_when(event):
                    w.stop()
        except Exception as e:  # reported by the caller
            errors.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return events, errors, t


def event_summary(events):
    return [(e["type"], e["raw_object"].get("metadata", {}).get("name")) for e in events]


@check
def watch_adds_modifies_deletes_and_resumes(c, args):
    start = c.tj("list_namespaced_custom_object")["metadata"]["resourceVersion"]
    is_watched = lambda e: e["raw_object"].get("metadata", {}).get("name") == "watched"
    events, errors, t = collect(
        c.custom.list_namespaced_custom_object,
        lambda e: e["type"] == "DELETED" and is_watched(e), 20,
        group=GROUP, version=VERSION, namespace=NS, plural=PLURAL, resource_version=start)
    c.tj("create_namespaced_custom_object", training_job("watched"))
    wait_for("watch sees ADDED", lambda: any(e["type"] == "ADDED" and is_watched(e)
                                             for e in events))
    c.tj("patch_namespaced_custom_object", "watched", {"spec": {"numNodes": 3}})
    wait_for("watch sees MODIFIED", lambda: any(e["type"] == "MODIFIED" and is_watched(e)
                                                for e in events))
    c.tj("delete_namespaced_custom_object", "watched")
    t.join(25)
    expect(not t.is_alive(), "watch did not end after DELETED: %r" % event_summary(events))
    expect(not errors, "watch raised %r" % errors)
    mine = [e for e in events if is_watched(e)]
    expect_eq([e["type"] for e in mine], ["ADDED", "MODIFIED", "DELETED"],
              "events of the watched object")
    expect_eq(mine[1]["object"]["spec"]["numNodes"], 3, "MODIFIED object")
    versions = [int(e["raw_object"]["metadata"]["resourceVersion"]) for e in mine]
    expect(versions == sorted(versions) and len(set(versions)) == 3,
           "resourceVersions not increasing: %r" % versions)

    # Resuming from the ADDED event's version replays what came after it.
    resumed, errors, t = collect(
        c.custom.list_namespaced_custom_object,
        lambda e: e["type"] == "DELETED" and is_watched(e), 5,
        group=GROUP, version=VERSION, namespace=NS, plural=PLURAL,
        resource_version=mine[0]["raw_object"]["metadata"]["resourceVersion"])
    t.join(10)
    expect(not errors, "resumed watch raised %r" % errors)
    expect_eq(event_summary(resumed), [("MODIFIED", "watched"), ("DELETED", "watched")],
              "watch resumed from a resourceVersion")

    # With bookmarks allowed (the sim sends them every 300 ms in this test), a BOOKMARK
    # arrives holding only the version.
    marks, errors, t = collect(c.custom.list_namespaced_custom_object,
                               lambda e: e["type"] == "BOOKMARK", 10, group=GROUP,
                               version=VERSION, namespace=NS, plural=PLURAL,
                               allow_watch_bookmarks=True)
    t.join(12)
    expect(not errors, "bookmark watch raised %r" % errors)
    bookmarks = [e for e in marks if e["type"] == "BOOKMARK"]
    expect(bookmarks, "no BOOKMARK with allow_watch_bookmarks=True: %r" % event_summary(marks))
    expect(bookmarks[0]["raw_object"]["metadata"].get("resourceVersion"),
           "BOOKMARK without resourceVersion")


@check
def watch_from_a_compacted_version_raises_410(c, args):
    old = c.tj("list_namespaced_custom_object")["metadata"]["resourceVersion"]
    c.tj("create_namespaced_custom_object", training_job("after-compaction"))
    c.sim_fault({"compactHistory": True})
    # With timeout_seconds the client does not retry: the ERROR event's 410 is raised.
    w = watch.Watch()
    try:
        for _ in w.stream(c.custom.list_namespaced_custom_object, GROUP, VERSION, NS, PLURAL,
                          resource_version=old, timeout_seconds=5):
            pass
        raise Mismatch("watch from a compacted version ended without an error")
    except ApiException as e:
        expect_eq(e.status, 410, "watch 410: ApiException.status")
        expect(str(e.reason).startswith("Expired: too old resource version"),
               "watch 410 reason %r" % e.reason)
    # Without it, the client retries once from the same version, then raises.
    try:
        for _ in watch.Watch().stream(c.custom.list_namespaced_custom_object, GROUP, VERSION,
                                      NS, PLURAL, resource_version=old):
            pass
        raise Mismatch("retried watch from a compacted version ended without an error")
    except ApiException as e:
        expect_eq(e.status, 410, "retried watch 410: ApiException.status")
    # A fresh list and a watch from its version work again.
    fresh = c.tj("list_namespaced_custom_object")["metadata"]["resourceVersion"]
    events = list(watch.Watch().stream(c.custom.list_namespaced_custom_object, GROUP, VERSION,
                                       NS, PLURAL, resource_version=fresh, timeout_seconds=1))
    expect_eq(events, [], "watch from a fresh version after compaction")


@check
def typed_batch_v1_job(c, args):
    job = client.V1Job(
        metadata=client.V1ObjectMeta(name="probe", labels={"commgate.io/job": "bert"}),
        spec=client.V1JobSpec(
            completion_mode="Indexed", completions=2, parallelism=2, backoff_limit=0,
            template=client.V1PodTemplateSpec(spec=client.V1PodSpec(
                restart_policy="Never",
                containers=[client.V1Container(name="probe", image="commgate/probe",
                                               command=["true"])]))))
    created = c.batch.create_namespaced_job(NS, job)
    expect(isinstance(created, client.V1Job), "create_namespaced_job type")
    expect(created.metadata.uid, "Job uid")
    expect_eq(created.spec.completions, 2, "Job spec.completions")
    listed = c.batch.list_namespaced_job(NS, label_selector="commgate.io/job=bert")
    expect_eq([j.metadata.name for j in listed.items], ["probe"], "Job list by label")
    expect(listed.metadata.resource_version, "JobList metadata.resourceVersion")
    # A dict body is a strategic merge patch, a list body a JSON patch.
    patched = c.batch.patch_namespaced_job("probe", NS,
                                           {"metadata": {"annotations": {"a": "1"}}})
    expect_eq(patched.metadata.annotations, {"a": "1"}, "Job strategic merge patch")
    patched = c.batch.patch_namespaced_job(
        "probe", NS, [{"op": "add", "path": "/metadata/annotations/b", "value": "2"}])
    expect_eq(patched.metadata.annotations, {"a": "1", "b": "2"}, "Job JSON patch")
    status = c.batch.patch_namespaced_job_status("probe", NS, {"status": {"active": 2}})
    expect_eq(status.status.active, 2, "Job status patch")
    events, errors, t = collect(c.batch.list_namespaced_job, lambda e: e["type"] == "DELETED",
                                10, namespace=NS)
    wait_for("typed watch sees the Job", lambda: events)
    expect(isinstance(events[0]["object"], client.V1Job), "typed watch object type")
    gone = c.batch.delete_namespaced_job("probe", NS, propagation_policy="Background")
    expect_eq((gone.status, gone.details.name, gone.details.kind), ("Success", "probe", "jobs"),
              "Job delete answer (V1Status)")
    t.join(12)
    expect(not errors, "Job watch raised %r" % errors)
    expect_eq(event_summary(events), [("ADDED", "probe"), ("DELETED", "probe")],
              "typed Job watch")
    expect_api_error("read a deleted Job", 404, "NotFound", c.batch.read_namespaced_job,
                     "probe", NS)


@check
def typed_coordination_v1_lease(c, args):
    acquired = now_micro()
    lease = client.V1Lease(
        metadata=client.V1ObjectMeta(name="commgate-operator"),
        spec=client.V1LeaseSpec(holder_identity="op-0", lease_duration_seconds=15,
                                acquire_time=acquired, renew_time=acquired,
                                lease_transitions=0))
    created = c.coordination.create_namespaced_lease(NS, lease)
    expect_eq(created.spec.holder_identity, "op-0", "Lease holder")
    expect_eq(created.spec.renew_time, acquired, "Lease renewTime (MicroTime) round trip")
    # The client sends isoformat() ("+00:00"); upstream stores the decoded time and
    # writes it back canonical.
    stored = raw(c.coordination.read_namespaced_lease, "commgate-operator", NS)
    expect_eq(stored["spec"]["renewTime"], micro_time(acquired), "Lease renewTime on the wire")
    # Leader election renews with a read and a replace, optimistic on resourceVersion.
    current = c.coordination.read_namespaced_lease("commgate-operator", NS)
    current.spec.renew_time = acquired + datetime.timedelta(seconds=5)
    renewed = c.coordination.replace_namespaced_lease("commgate-operator", NS, current)
    expect_eq(renewed.spec.renew_time, acquired + datetime.timedelta(seconds=5),
              "Lease renewed")
    expect_api_error("a takeover from a stale read", 409, "Conflict",
                     c.coordination.replace_namespaced_lease, "commgate-operator", NS, current)
    c.coordination.delete_namespaced_lease("commgate-operator", NS)
    expect_api_error("read a deleted Lease", 404, "NotFound",
                     c.coordination.read_namespaced_lease, "commgate-operator", NS)


@check
def typed_events_k8s_io_v1_event(c, args):
    when = now_micro()
    event = client.EventsV1Event(
        metadata=client.V1ObjectMeta(generate_name="bert."), event_time=when,
        reason="Downsized", note="admitted at 2 of 4 nodes", type="Normal", action="Admit",
        reporting_controller="commgate.io/operator", reporting_instance="op-0",
        regarding=client.V1ObjectReference(api_version=GROUP + "/" + VERSION,
                                           kind="TrainingJob", name="bert", namespace=NS))
    created = c.events.create_namespaced_event(NS, event)
    name = created.metadata.name
    expect(name.startswith("bert.") and len(name) == len("bert.") + 5,
           "generateName: %r" % name)
    expect_eq(created.event_time, when, "Event eventTime (MicroTime) round trip")
    stored = raw(c.events.read_namespaced_event, name, NS)
    expect_eq(stored["eventTime"], micro_time(when), "Event eventTime on the wire")
    listed = c.events.list_namespaced_event(NS, field_selector="regarding.name=bert")
    expect_eq([e.metadata.name for e in listed.items], [name], "Events by regarding.name")
    series = c.events.patch_namespaced_event(
        name, NS, {"series": {"count": 2, "lastObservedTime": when.isoformat()}})
    expect_eq(series.series.count, 2, "Event series patch")
    c.events.delete_namespaced_event(name, NS)
    expect_api_error("read a deleted Event", 404, "NotFound", c.events.read_namespaced_event,
                     name, NS)


@check
def typed_core_v1_service(c, args):
    service = client.V1Service(
        metadata=client.V1ObjectMeta(name="bert-rdzv", labels={"commgate.io/job": "bert"}),
        spec=client.V1ServiceSpec(
            cluster_ip="None", selector={"commgate.io/job": "bert"},
            ports=[client.V1ServicePort(name="c10d", port=29400)]))
    created = c.core.create_namespaced_service(NS, service)
    expect_eq(created.spec.cluster_ip, "None", "headless Service clusterIP")
    expect_eq(created.spec.ports[0].port, 29400, "Service port")
    listed = c.core.list_namespaced_service(NS, label_selector="commgate.io/job=bert")
    expect_eq([s.metadata.name for s in listed.items], ["bert-rdzv"], "Services by label")
    patched = c.core.patch_namespaced_service("bert-rdzv", NS,
                                              {"metadata": {"labels": {"extra": "yes"}}})
    expect_eq(patched.metadata.labels, {"commgate.io/job": "bert", "extra": "yes"},
              "Service merge of labels")
    c.core.delete_namespaced_service("bert-rdzv", NS)
    expect_api_error("read a deleted Service", 404, "NotFound",
                     c.core.read_namespaced_service, "bert-rdzv", NS)


@check
def bad_query_values_are_400_like_kube_apiserver(c, args):
    path = "/apis/%s/%s/namespaces/%s/%s" % (GROUP, VERSION, NS, PLURAL)
    body = expect_api_error("timeoutSeconds=soon", 400, "BadRequest", c.api.call_api, path,
                            "GET", query_params=[("watch", "True"), ("timeoutSeconds", "soon")],
                            auth_settings=["BearerToken"], response_type="object")
    expect_eq(body.get("message"), 'strconv.ParseInt: parsing "soon": invalid syntax',
              "400 message")
    # Booleans never fail upstream: "False" lists.
    listed = c.api.call_api(path, "GET", query_params=[("watch", "False")],
                            auth_settings=["BearerToken"], response_type="object",
                            _return_http_data_only=True)
    expect_eq(listed.get("kind"), "TrainingJobList", "watch=False lists")


@check
def server_side_apply_and_managed_fields(c, args):
    # client 22.6 has no apply helper: the PATCH with the apply content type (its REST layer
    # sends only a string body under a non-JSON type; JSON is YAML), answered as typed
    # objects (V1ManagedFieldsEntry, fields_v1 as a dict).
    path = "/api/v1/namespaces/%s/configmaps/ssa-py" % NS

    def apply(data, manager, force=False):
        query = [("fieldManager", manager)] + ([("force", "true")] if force else [])
        body = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "ssa-py", "namespace": NS}, "data": data}
        return c.api.call_api(path, "PATCH", query_params=query,
                              header_params={"Content-Type": "application/apply-patch+yaml",
                                             "Accept": "application/json"},
                              body=json.dumps(body), auth_settings=["BearerToken"],
                              response_type="V1ConfigMap", _return_http_data_only=True)

    created = apply({"a": "1"}, "py-one")
    entries = created.metadata.managed_fields or []
    expect_eq([(e.manager, e.operation, e.fields_type) for e in entries],
              [("py-one", "Apply", "FieldsV1")], "managedFields after the first apply")
    expect_eq(entries[0].fields_v1, {"f:data": {"f:a": {}}}, "fieldsV1")
    body = expect_api_error("apply over another manager's field", 409, "Conflict",
                            apply, {"a": "2"}, "py-two")
    expect_eq(body.get("message"),
              'Apply failed with 1 conflict: conflict with "py-one": .data.a', "conflict message")
    expect_eq(body["details"]["causes"][0]["type"], "FieldManagerConflict", "cause type")
    forced = apply({"a": "2"}, "py-two", force=True)
    expect_eq(forced.data, {"a": "2"}, "forced data")
    expect_eq([e.manager for e in forced.metadata.managed_fields], ["py-two"],
              "managers after force")
    # A typed update is an Update operation of its own manager.
    forced.data["b"] = "3"
    replaced = c.core.replace_namespaced_config_map("ssa-py", NS, forced, field_manager="py-put")
    ops = sorted((e.manager, e.operation) for e in replaced.metadata.managed_fields)
    expect_eq(ops, [("py-put", "Update"), ("py-two", "Apply")], "managers after a PUT")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--crd", required=True)
    parser.add_argument("--work-dir", default="/tmp")
    args = parser.parse_args()
    c = Cluster(args.kubeconfig, args.work_dir)
    passed, failed = 0, 0
    for fn in CHECKS:
        try:
            fn(c, args)
            passed += 1
            print("ok   %s" % fn.__name__, flush=True)
        except Mismatch as e:
            failed += 1
            print("FAIL %s: %s" % (fn.__name__, e), flush=True)
        except ApiException as e:
            failed += 1
            print("FAIL %s: unexpected ApiException %s %s: %s"
                  % (fn.__name__, e.status, e.reason, e.body), flush=True)
        except Exception:  # a client error reading the sim's answer is a mismatch too
            failed += 1
            print("FAIL %s: %s" % (fn.__name__, traceback.format_exc()), flush=True)
        if fn is install_crd_and_namespace and failed:
            break  # nothing else can run
    print("python_client_check: %d passed, %d failed" % (passed, failed), flush=True)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
