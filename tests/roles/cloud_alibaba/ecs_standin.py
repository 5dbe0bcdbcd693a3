"""A loopback stand-in for Alibaba Cloud's ECS API (2014-05-26), for the nccl_alibaba_ecs tests.

It checks what the real API checks first: each request's ACS3-HMAC-SHA256 signature (recomputed
here from the canonical request, with the secret the test planted) and the body's hash; it rejects
a parameter that the official SDK's request model of that action does not define; it answers
DescribeInstanceAttribute, DescribeSecurityGroupAttribute and AuthorizeSecurityGroup with bodies
shaped as the API reference's examples
(https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-describeinstanceattribute,
.../api-ecs-2014-05-26-describesecuritygroupattribute, .../api-ecs-2014-05-26-authorizesecuritygroup),
which the SDK must parse; and it records every action, so a test can tell a read from a write.
It stands in for the real API only where a test cannot reach it; nothing here is a model of ECS.
"""

from __future__ import annotations

import hashlib
import hmac
import inspect
import json
import re
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, quote, urlsplit

from alibabacloud_ecs20140526 import models as ecs_models

ACTIONS = ("DescribeInstanceAttribute", "DescribeSecurityGroupAttribute", "DescribeSecurityGroups",
           "DescribeDeploymentSets", "DescribeNetworkInterfaces", "AuthorizeSecurityGroup",
           "AuthorizeSecurityGroupEgress")


def model_keys(model) -> set:
    """The request parameter names the SDK's model defines (its to_map keys)."""
    return set(re.findall(r"result\['([A-Za-z0-9]+)'\]", inspect.getsource(model.to_map)))


ALLOWED = {action: model_keys(getattr(ecs_models, f"{action}Request")) for action in ACTIONS}
NESTED = {("AuthorizeSecurityGroup", "Permissions"): model_keys(ecs_models.AuthorizeSecurityGroupRequestPermissions),
          ("AuthorizeSecurityGroupEgress", "Permissions"):
              model_keys(ecs_models.AuthorizeSecurityGroupEgressRequestPermissions)}


def canonical_query(query: dict) -> str:
    return "&".join(f"{key}={quote(query[key], safe='~')}" for key in sorted(query))


class EcsStandin:
    def __init__(self, credentials: dict, instances: dict, groups: dict, region: str = "cn-hangzhou",
                 deployment_sets: list | None = None):
        self.credentials = credentials            # access key id -> secret
        self.instances = instances                # id -> attributes (API field names)
        self.groups = groups                      # id -> {"InnerAccessPolicy", "Permissions": [...],
        #                                           optionally "SecurityGroupType": normal|enterprise}
        self.region = region
        self.deployment_sets = deployment_sets or []   # [{"DeploymentSetId", "Strategy", "InstanceIds": [...]}]
        self.actions: list = []                   # (action, params) of every accepted request
        self.rejected: list = []                  # (code, message) of every refused one
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                standin.handle(self)

            do_GET = do_POST

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    def writes(self) -> list:
        return [action for action, dummy in self.actions if not action.startswith("Describe")]

    # -- one request -------------------------------------------------------------------------
    def handle(self, request) -> None:
        length = int(request.headers.get("content-length") or 0)
        body = request.rfile.read(length) if length else b""
        url = urlsplit(request.path)
        query = dict(parse_qsl(url.query, keep_blank_values=True))
        problem = self.signature_problem(request, url.path or "/", query, body)
        if problem:
            return self.answer(request, 400, "SignatureDoesNotMatch", problem)
        action = request.headers.get("x-acs-action", "")
        if action not in ACTIONS or request.headers.get("x-acs-version") != "2014-05-26":
            return self.answer(request, 400, "InvalidAction.NotFound", f"{action} is not served here")
        params = dict(query, **dict(parse_qsl(body.decode(), keep_blank_values=True)))
        unknown = sorted(name for name in params if not self.defined(action, name))
        if unknown:
            return self.answer(request, 400, "InvalidParameter", f"{action} defines no {', '.join(unknown)}")
        self.actions.append((action, params))
        status, payload = getattr(self, action)(params)
        self.respond(request, status, payload)

    def defined(self, action: str, name: str) -> bool:
        top, dummy, rest = name.partition(".")
        if top not in ALLOWED[action]:
            return False
        if not rest:
            return True
        index, dummy, sub = rest.partition(".")
        return index.isdigit() and sub in NESTED.get((action, top), set())

    def signature_problem(self, request, path: str, query: dict, body: bytes) -> str:
        authorization = request.headers.get("Authorization", "")
        match = re.fullmatch(r"ACS3-HMAC-SHA256 Credential=([^,]+),SignedHeaders=([^,]+),Signature=([0-9a-f]+)",
                             authorization)
        if not match:
            return "no ACS3-HMAC-SHA256 Authorization header"
        key, signed, signature = match.groups()
        secret = self.credentials.get(key)
        if secret is None:
            return f"unknown access key {key[:4]}..."
        payload_hash = hashlib.sha256(body).hexdigest()
        if request.headers.get("x-acs-content-sha256") != payload_hash:
            return "x-acs-content-sha256 is not the body's hash"
        names = signed.split(";")
        if not {"host", "x-acs-action", "x-acs-date", "x-acs-signature-nonce"} <= set(names):
            return "required headers are not signed"
        headers = "".join(f"{name}:{(request.headers.get(name) or '').strip()}\n" for name in names)
        canonical = "\n".join([request.command, path, canonical_query(query), headers, signed, payload_hash])
        to_sign = "ACS3-HMAC-SHA256\n" + hashlib.sha256(canonical.encode()).hexdigest()
        expected = hmac.new(secret.encode(), to_sign.encode(), hashlib.sha256).hexdigest()
        return "" if hmac.compare_digest(expected, signature) else "the signature does not match"

    def answer(self, request, status: int, code: str, message: str) -> None:
        self.rejected.append((code, message))
        self.respond(request, status, {"Code": code, "Message": message, "RequestId": str(uuid.uuid4()).upper(),
                                       "HostId": "ecs.aliyuncs.com"})

    def respond(self, request, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        request.send_response(status)
        request.send_header("Content-Type", "application/json;charset=utf-8")
        request.send_header("Content-Length", str(len(data)))
        request.end_headers()
        request.wfile.write(data)

    # -- the actions -------------------------------------------------------------------------
    def DescribeInstanceAttribute(self, params):
        instance = self.instances.get(params.get("InstanceId"))
        if instance is None:
            return 404, {"Code": "InvalidInstanceId.NotFound", "RequestId": str(uuid.uuid4()).upper(),
                         "Message": "The specified InstanceId does not exist."}
        return 200, {"RequestId": str(uuid.uuid4()).upper(), "InstanceId": params["InstanceId"],
                     "InstanceName": params["InstanceId"], "RegionId": self.region, "ZoneId": f"{self.region}-i",
                     "InstanceType": "ecs.g8i.xlarge", "Status": "Running", "Cpu": 4, "Memory": 16384,
                     "InstanceNetworkType": "vpc", "EnableJumboFrame": instance["EnableJumboFrame"],
                     "SecurityGroupIds": {"SecurityGroupId": instance["SecurityGroupIds"]},
                     "VpcAttributes": {"VpcId": "vpc-bp1opxu1zkhn00gzv****", "VSwitchId": "vsw-bp1s5fnvk4gn2tws0****",
                                       "PrivateIpAddress": {"IpAddress": [instance.get("PrivateIp", "172.16.0.10")]}},
                     "OperationLocks": {"LockReason": []}}

    def DescribeSecurityGroupAttribute(self, params):
        group = self.groups[params["SecurityGroupId"]]
        permissions = [dict({"Direction": "ingress", "Policy": "Accept", "Priority": "1", "NicType": "intranet",
                             "CreateTime": "2026-12-01T08:00:00Z", "SecurityGroupRuleId": f"sgr-{i:04d}****"}, **rule)
                       for i, rule in enumerate(group["Permissions"])]
        return 200, {"RequestId": str(uuid.uuid4()).upper(), "RegionId": params.get("RegionId"),
                     "SecurityGroupId": params["SecurityGroupId"], "SecurityGroupName": "cluster",
                     "Description": "", "VpcId": "vpc-bp1opxu1zkhn00gzv****",
                     "InnerAccessPolicy": group["InnerAccessPolicy"], "Permissions": {"Permission": permissions}}

    def DescribeSecurityGroups(self, params):
        wanted = json.loads(params.get("SecurityGroupIds") or "[]")
        found = [{"SecurityGroupId": gid, "SecurityGroupName": "cluster", "VpcId": "vpc-bp1opxu1zkhn00gzv****",
                  "SecurityGroupType": self.groups[gid].get("SecurityGroupType", "normal"),
                  "CreationTime": "2026-12-01T08:00:00Z", "Description": ""}
                 for gid in wanted if gid in self.groups]
        return 200, {"RequestId": str(uuid.uuid4()).upper(), "RegionId": params.get("RegionId"),
                     "TotalCount": len(found), "SecurityGroups": {"SecurityGroup": found}}

    def DescribeDeploymentSets(self, params):
        page, size = int(params.get("PageNumber") or 1), int(params.get("PageSize") or 10)
        chosen = self.deployment_sets[(page - 1) * size:page * size]
        sets = [{"DeploymentSetId": entry["DeploymentSetId"], "DeploymentStrategy": entry["Strategy"],
                 "Strategy": entry["Strategy"], "Domain": "Default", "Granularity": "Host",
                 "InstanceAmount": len(entry["InstanceIds"]), "InstanceIds": {"InstanceId": entry["InstanceIds"]},
                 "CreationTime": "2026-12-01T08:00:00Z"} for entry in chosen]
        return 200, {"RequestId": str(uuid.uuid4()).upper(), "RegionId": params.get("RegionId"),
                     "TotalCount": len(self.deployment_sets), "PageNumber": page, "PageSize": size,
                     "DeploymentSets": {"DeploymentSet": sets}}

    def DescribeNetworkInterfaces(self, params):
        instance = self.instances.get(params.get("InstanceId"), {})
        nics = [{"NetworkInterfaceId": f"eni-{params.get('InstanceId')}-{n}", "InstanceId": params.get("InstanceId"),
                 "Type": "Primary" if n == 0 else "Secondary", "Status": "InUse",
                 "NetworkInterfaceTrafficMode": mode}
                for n, mode in enumerate(instance.get("TrafficModes", ["Standard"]))]
        return 200, {"RequestId": str(uuid.uuid4()).upper(), "TotalCount": len(nics),
                     "NetworkInterfaceSets": {"NetworkInterfaceSet": nics}}

    def AuthorizeSecurityGroup(self, params, direction="ingress"):
        group = self.groups[params["SecurityGroupId"]]
        index = 1
        while f"Permissions.{index}.PortRange" in params:
            prefix = f"Permissions.{index}."
            rule = {key[len(prefix):]: value for key, value in params.items() if key.startswith(prefix)}
            if direction != "ingress":
                rule["Direction"] = direction
            group["Permissions"].append(rule)
            index += 1
        return 200, {"RequestId": str(uuid.uuid4()).upper()}

    def AuthorizeSecurityGroupEgress(self, params):
        return self.AuthorizeSecurityGroup(params, "egress")
