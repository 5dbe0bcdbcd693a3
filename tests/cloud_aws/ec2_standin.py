"""A loopback EC2 Query API stand-in for what moto cannot model: placement groups and EFA interfaces.

moto keeps no placement group on an instance and reports every interface as `interface`. This
server answers DescribeInstances, DescribeSecurityGroups, DescribePlacementGroups and
CreatePlacementGroup from a fixture, and checks everything against botocore's own EC2 service
model: the operation exists, every parameter is a member of its input, required members are
present, enum values are among the model's; responses are serialized from the model's output
shapes (element names, `item` lists), so a field the model lacks or an enum value it does not
know (InterfaceType must be one of NetworkInterfaceType's, such as `efa` or `efa-only`) fails.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl
from xml.sax.saxutils import escape

import botocore.session

MODEL = botocore.session.get_session().get_service_model("ec2")
NAMESPACE = f"http://ec2.amazonaws.com/doc/{MODEL.api_version}/"
# Members whose model shape is a plain string but whose values the model lists in another shape.
ENUM_OF = {"InterfaceType": "NetworkInterfaceType", "Strategy": "PlacementStrategy"}


class ModelError(ValueError):
    pass


def _query_name(name, shape):
    return shape.serialization.get("queryName") or (shape.serialization.get("name") or name)[:1].upper() + (
        shape.serialization.get("name") or name)[1:]


def validate_request(params: dict) -> object:
    """The operation model of a Query request, after checking its parameters against it."""
    action = params.pop("Action", "")
    if action not in MODEL.operation_names:
        raise ModelError(f"InvalidAction: {action!r} is not an EC2 operation")
    if params.pop("Version", "") != MODEL.api_version:
        raise ModelError(f"InvalidParameterValue: Version must be {MODEL.api_version}")
    operation = MODEL.operation_model(action)
    members = {_query_name(name, shape): (name, shape) for name, shape in operation.input_shape.members.items()}
    for key, value in params.items():
        top = key.split(".", 1)[0]
        if top not in members:
            raise ModelError(f"UnknownParameter: {key} is not a member of {action}")
        name, shape = members[top]
        allowed = getattr(shape, "enum", None) or (MODEL.shape_for(ENUM_OF[name]).enum if name in ENUM_OF else [])
        if allowed and value not in allowed:
            raise ModelError(f"InvalidParameterValue: {name}={value!r} is not one of the model's values")
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

    def __init__(self, instances, security_groups, placement_groups):
        self.instances, self.security_groups = instances, security_groups
        self.placement_groups = list(placement_groups)
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

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
                try:
                    operation, data = standin.answer(dict(parse_qsl(body, keep_blank_values=True)))
                    xml = serialize(operation.output_shape, {**data, "RequestId": "standin"}
                                    if "RequestId" in operation.output_shape.members else data,
                                    f"{operation.name}Response")
                    xml = xml.replace(f"<{operation.name}Response>",
                                      f'<{operation.name}Response xmlns="{NAMESPACE}"><requestId>standin</requestId>', 1)
                    code = 200
                except ModelError as error:
                    code_name, _, message = str(error).partition(": ")
                    standin.calls.append(f"error {code_name}")
                    xml = (f"<Response><Errors><Error><Code>{escape(code_name)}</Code><Message>{escape(message)}"
                           "</Message></Error></Errors><RequestID>standin</RequestID></Response>")
                    code = 400
                payload = xml.encode()
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
