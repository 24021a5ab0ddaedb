// Package protocol frames Kafka requests and responses on a connection.
//
// A request on the wire:
//
//	size           int32   bytes that follow
//	api_key        int16
//	api_version    int16
//	correlation_id int32
//	client_id      int16 length + bytes (-1 = null); present in header v1 and v2
//	tagged_fields  uvarint count + fields; header v2 only (flexible versions)
//	body           the request for (api_key, api_version), as kmsg encodes it
//
// A response:
//
//	size           int32
//	correlation_id int32
//	tagged_fields  header v1 only: flexible versions, except ApiVersions,
//	               whose response header is always v0 so that a client can
//	               read it before it knows which versions the broker has
//	body
//
// The body codecs are kmsg's; this package only handles what surrounds them.
package protocol
