"""kafka-python's admin ACL calls against a broker whose super user is
User:ANONYMOUS: create_acls, describe_acls, delete_acls. Prints a JSON
report on stdout; any failure raises.

usage: acls.py BOOTSTRAP
"""
import json
import sys

from kafka import KafkaAdminClient
from kafka.admin import (ACL, ACLFilter, ACLOperation, ACLPermissionType,
                         ACLResourcePatternType, ResourcePattern,
                         ResourcePatternFilter, ResourceType)


def main():
    admin = KafkaAdminClient(bootstrap_servers=sys.argv[1], client_id="brook-compat-py-acls")
    read = ACL(principal="User:alice", host="*", operation=ACLOperation.READ,
               permission_type=ACLPermissionType.ALLOW,
               resource_pattern=ResourcePattern(ResourceType.TOPIC, "orders"))
    write = ACL(principal="User:bob", host="*", operation=ACLOperation.WRITE,
                permission_type=ACLPermissionType.ALLOW,
                resource_pattern=ResourcePattern(ResourceType.TOPIC, "app-", ACLResourcePatternType.PREFIXED))
    created = admin.create_acls([read, write])
    if created["failed"]:
        raise RuntimeError("create_acls failed: %r" % (created["failed"],))
    any_topic = ACLFilter(principal=None, host=None, operation=ACLOperation.ANY,
                          permission_type=ACLPermissionType.ANY,
                          resource_pattern=ResourcePatternFilter(ResourceType.TOPIC, None, ACLResourcePatternType.ANY))
    described, err = admin.describe_acls(any_topic)
    listed = sorted("%s %s %s" % (a.principal, a.resource_pattern.resource_name, a.operation.name) for a in described)
    deleted = admin.delete_acls([ACLFilter(principal="User:bob", host=None, operation=ACLOperation.ANY,
                                           permission_type=ACLPermissionType.ANY,
                                           resource_pattern=ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY))])
    removed = [a.principal for _, acls, _ in deleted for a, _ in acls]
    after, _ = admin.describe_acls(any_topic)
    print(json.dumps({
        "described": listed,
        "describe_error": str(err),
        "deleted": removed,
        "after": sorted(a.principal for a in after),
    }))
    admin.close()


if __name__ == "__main__":
    main()
