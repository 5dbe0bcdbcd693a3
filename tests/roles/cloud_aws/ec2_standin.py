"""A loopback EC2 Query API stand-in for what moto cannot model: placement groups and EFA interfaces.

moto has no placement-group API at all, keeps no placement group on an instance and reports
every interface as `interface`. This server answers DescribePlacementGroups and
CreatePlacementGroup, and DescribeInstances from a fixture (instances=None: from moto).
Security groups either come from the fixture too (read-only), or, with `forward_to`, every
other operation (DescribeSecurityGroups, Authorize*/Revoke*, ...) is forwarded to moto, whose
security groups keep real rule state: that is how the EFA self rules are applied and read back.
Every request, answered or forwarded, is first checked against botocore's own EC2 service model:
the operation exists, every flattened parameter down to its leaf is a member of its shape,
required members are present, enum values are among the model's; answers are serialized from
the model's output shapes (element names, `item` lists), so a field the model
lacks or an enum value it does not know (InterfaceType must be one of NetworkInterfaceType's,
such as `efa` or `efa-only`) fails.
"""

from __future__ import annotations

import re
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl
from xml.sax.saxutils import escape

import botocore.session

MODEL = botocore.session.get_session().get_service_model("ec2")
# ec2_security_group asks STS for the account id (the UserId of a group pair); with forward_to,
# those requests are checked against STS's own model and forwarded too.
MODELS = {"ec2": MODEL, "sts": botocore.session.get_session().get_service_model("sts")}
SCOPE = re.compile(r"Credential=[^/]*/\d{8}/[^/]+/([a-z0-9-]+)/aws4_request")
NAMESPACE = f"http://ec2.amazonaws.com/doc/{MODEL.api_version}/"
# Members whose model shape is a plain string but whose values the model lists in another shape.
ENUM_OF = {"InterfaceType": "NetworkInterfaceType", "Strategy": "PlacementStrategy"}


class ModelError(ValueError):
    pass


def _query_name(name, shape):
    return shape.serialization.get("queryName") or (shape.serialization.get("name") or name)[:1].upper() + (
        shape.serialization.get("name") or name)[1:]


def _allowed(name, shape):
    return getattr(shape, "enum", None) or (MODEL.shape_for(ENUM_OF[name]).enum if name in ENUM_OF else [])


def service_of(authorization: str) -> str:
    """The service a SigV4-signed request is for, from its credential scope ("" when unsigned)."""
    found = SCOPE.search(authorization or "")
    return found.group(1) if found else ""


def _check_member(action, key, parts, name, shape, value):
    """Walk one flattened Query key (IpPermissions.1.Groups.1.GroupId) down the model's shapes."""
    if shape.type_name == "list":
        if not parts or not parts[0].isdigit():
            raise ModelError(f"UnknownParameter: {key} is not a member of {action}")
        return _check_member(action, key, parts[1:], name, shape.member, value)
    if shape.type_name == "structure":
        members = {_query_name(member, sub): (member, sub) for member, sub in shape.members.items()}
        if not parts or parts[0] not in members:
            raise ModelError(f"UnknownParameter: {key} is not a member of {action}")
        return _check_member(action, key, parts[1:], *members[parts[0]], value)
    if parts:
        raise ModelError(f"UnknownParameter: {key} is not a member of {action}")
    allowed = _allowed(name, shape)
    if allowed and value not in allowed:
        raise ModelError(f"InvalidParameterValue: {name}={value!r} is not one of the model's values")
    if shape.type_name == "integer" and not value.lstrip("-").isdigit():
        raise ModelError(f"InvalidParameterValue: {key}={value!r} is not an integer")


def validate_request(params: dict, model=MODEL) -> object:
    """The operation model of a Query request, after checking its parameters against it: every
    flattened key down to the leaf is a member of its shape, enum values are the model's."""
    action = params.pop("Action", "")
    if action not in model.operation_names:
        raise ModelError(f"InvalidAction: {action!r} is not an {model.service_name.upper()} operation")
    if params.pop("Version", "") != model.api_version:
        raise ModelError(f"InvalidParameterValue: Version must be {model.api_version}")
    operation = model.operation_model(action)
    for key, value in params.items():
        _check_member(action, key, key.split("."), action, operation.input_shape, value)
    for name in operation.input_shape.required_members:
        query = _query_name(name, operation.input_shape.members[name])
        if not any(key == query or key.startswith(query + ".") for key in params):
            raise ModelError(f"MissingParameter: {action} needs {name}")
    return operation


def serialize(shape, value, element: str) -> str:
    """XML of a value in the shape the model documents for it (EC2 protocol)."""
    if shape.type_name == "structure":
        unknown = set(value) - set(shape.members)
        if unknown:
            raise ModelError(f"{shape.name} has no member(s) {sorted(unknown)}")
        inner = "".join(serialize(shape.members[name], item, shape.members[name].serialization.get("name", name))
                        for name, item in value.items())
        return f"<{element}>{inner}</{element}>"
    if shape.type_name == "list":
        tag = shape.member.serialization.get("name", "member")
        return f"<{element}>{''.join(serialize(shape.member, item, tag) for item in value)}</{element}>"
    allowed = getattr(shape, "enum", None) or (MODEL.shape_for(ENUM_OF[element[:1].upper() + element[1:]]).enum
                                               if element[:1].upper() + element[1:] in ENUM_OF else [])
    if allowed and value not in allowed:
        raise ModelError(f"{element}={value!r} is not one of the model's values")
    if shape.type_name == "boolean":
        value = "true" if value else "false"
    return f"<{element}>{escape(str(value))}</{element}>"


class Ec2StandIn:
    """Fixture data in boto3's CamelCase: instances (with Placement, NetworkInterfaces), groups."""

    OWN = ("DescribeInstances", "DescribePlacementGroups", "CreatePlacementGroup")
    # Signed-request headers moto needs; moto does not check the signature itself.
    FORWARDED_HEADERS = ("content-type", "authorization", "x-amz-date", "x-amz-security-token", "user-agent")

    def __init__(self, instances, security_groups, placement_groups, forward_to=None):
        self.instances, self.security_groups = instances, security_groups
        self.placement_groups = list(placement_groups)
        self.forward_to = forward_to
        self.own = self.OWN if instances is not None else self.OWN[1:]
        self.calls = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def answer(self, params: dict) -> dict:
        operation = validate_request(dict(params))
        self.calls.append(operation.name)
        if operation.name == "DescribeInstances":
            wanted = {value for key, value in params.items() if key.startswith("InstanceId.")}
            found = [inst for inst in self.instances if not wanted or inst["InstanceId"] in wanted]
            if wanted - {inst["InstanceId"] for inst in found}:
                raise ModelError(f"InvalidInstanceID.NotFound: {sorted(wanted - {i['InstanceId'] for i in found})}")
            return operation, {"Reservations": [{"ReservationId": "r-standin", "Instances": found}]}
        if operation.name == "DescribeSecurityGroups":
            return operation, {"SecurityGroups": self.security_groups}
        if operation.name == "DescribePlacementGroups":
            names = {value for key, value in params.items() if key.startswith("GroupName.")}
            return operation, {"PlacementGroups": [group for group in self.placement_groups
                                                   if not names or group["GroupName"] in names]}
        if operation.name == "CreatePlacementGroup":
            group = {"GroupName": params["GroupName"], "Strategy": params.get("Strategy", "cluster"),
                     "State": "available", "GroupId": "pg-standin0001"}
            self.placement_groups.append(group)
            return operation, {"PlacementGroup": group}
        raise ModelError(f"UnsupportedOperation: the stand-in does not answer {operation.name}")

    def _handler(self):
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def forward(self, body):
                """Pass a checked request on to moto unchanged; moto's answer goes back unchanged."""
                headers = {key: value for key, value in self.headers.items()
                           if key.lower() in Ec2StandIn.FORWARDED_HEADERS}
                request = urllib.request.Request(standin.forward_to, data=body.encode(), headers=headers)
                try:
                    with urllib.request.urlopen(request, timeout=30) as answer:
                        return answer.status, answer.read()
                except urllib.error.HTTPError as error:
                    return error.code, error.read()

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
                params = dict(parse_qsl(body, keep_blank_values=True))
                try:
                    service = service_of(self.headers.get("Authorization", "")) or "ec2"
                    if service not in MODELS or (service != "ec2" and not standin.forward_to):
                        raise ModelError(f"UnsupportedOperation: the stand-in does not answer {service}")
                    if standin.forward_to and (service != "ec2" or params.get("Action") not in standin.own):
                        operation = validate_request(dict(params), MODELS[service])
                        standin.calls.append(operation.name if service == "ec2" else f"{service}:{operation.name}")
                        self.reply(*self.forward(body))
                        return
                    operation, data = standin.answer(params)
                    xml = serialize(operation.output_shape, {**data, "RequestId": "standin"}
                                    if "RequestId" in operation.output_shape.members else data,
                                    f"{operation.name}Response")
                    opening = f'<{operation.name}Response xmlns="{NAMESPACE}"><requestId>standin</requestId>'
                    xml = xml.replace(f"<{operation.name}Response>", opening, 1)
                    code = 200
                except ModelError as error:
                    code_name, dummy, message = str(error).partition(": ")
                    standin.calls.append(f"error {code_name}")
                    xml = (f"<Response><Errors><Error><Code>{escape(code_name)}</Code><Message>{escape(message)}"
                           "</Message></Error></Errors><RequestID>standin</RequestID></Response>")
                    code = 400
                self.reply(code, xml.encode())

            def reply(self, code, payload):
                self.send_response(code)
                self.send_header("Content-Type", "text/xml")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        return Handler

    def __enter__(self):
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
