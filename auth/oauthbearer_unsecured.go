package auth

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// UnsecuredValidator is Kafka's default OAUTHBEARER validator on the
// broker (OAuthBearerUnsecuredValidatorCallbackHandler): it accepts
// unsigned JWS tokens (alg "none") and checks only their claims. It is
// what Kafka's tests and quick starts use; it is not for production.
type UnsecuredValidator struct {
	PrincipalClaimName string // default "sub"
	ScopeClaimName     string // default "scope"
	RequiredScope      []string
	AllowableClockSkew time.Duration
	Now                func() time.Time
}

// UnsecuredValidatorFromJAAS reads the unsecuredValidator* options of the
// OAuthBearerLoginModule entry, as Kafka does.
func UnsecuredValidatorFromJAAS(entries []JAASEntry, now func() time.Time) (*UnsecuredValidator, error) {
	opts, _ := JAASFor(entries, OAuthBearerLoginModule)
	v := &UnsecuredValidator{PrincipalClaimName: "sub", ScopeClaimName: "scope", Now: now}
	if s := strings.TrimSpace(opts["unsecuredValidatorPrincipalClaimName"]); s != "" {
		v.PrincipalClaimName = s
	}
	if s := strings.TrimSpace(opts["unsecuredValidatorScopeClaimName"]); s != "" {
		v.ScopeClaimName = s
	}
	if s := strings.TrimSpace(opts["unsecuredValidatorRequiredScope"]); s != "" {
		v.RequiredScope = strings.Fields(s)
	}
	if s := strings.TrimSpace(opts["unsecuredValidatorAllowableClockSkewMs"]); s != "" {
		ms, err := strconv.ParseInt(s, 10, 32)
		if err != nil || ms < 0 {
			return nil, fmt.Errorf("auth: unsecuredValidatorAllowableClockSkewMs %q: must be a non-negative integer", s)
		}
		v.AllowableClockSkew = time.Duration(ms) * time.Millisecond
	}
	return v, nil
}

// UnsecuredJWS is a parsed unsigned JWS compact serialization.
type UnsecuredJWS struct {
	Header map[string]any
	Claims map[string]any
}

// maxJWSLength bounds a token.
const maxJWSLength = 64 << 10

// ParseUnsecuredJWS parses header.claims. (three base64url parts, the
// signature empty) as Kafka's OAuthBearerUnsecuredJws does.
func ParseUnsecuredJWS(token string) (UnsecuredJWS, error) {
	var j UnsecuredJWS
	if len(token) > maxJWSLength {
		return j, fmt.Errorf("token of %d bytes", len(token))
	}
	if strings.Contains(token, "..") {
		return j, fmt.Errorf("Malformed compact serialization contains '..'")
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return j, fmt.Errorf("Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded values")
	}
	var err error
	if j.Header, err = decodeJWSPart(parts[0]); err != nil {
		return j, err
	}
	if j.Claims, err = decodeJWSPart(parts[1]); err != nil {
		return j, err
	}
	if alg, _ := j.Header["alg"].(string); alg != "none" {
		return j, fmt.Errorf("Unsecured JWS must have 'none' for an algorithm")
	}
	if parts[2] != "" {
		return j, fmt.Errorf("Unsecured JWS must not contain a digital signature")
	}
	return j, nil
}

func decodeJWSPart(s string) (map[string]any, error) {
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return nil, fmt.Errorf("malformed Base64 URL encoded value")
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil || m == nil {
		return nil, fmt.Errorf("malformed JSON")
	}
	return m, nil
}

// numberClaim reads a numeric claim; ok is false when it is absent.
func (j UnsecuredJWS) numberClaim(name string) (v float64, ok bool, err error) {
	raw, ok := j.Claims[name]
	if !ok || raw == nil {
		return 0, false, nil
	}
	n, isNum := raw.(json.Number)
	if !isNum {
		return 0, false, fmt.Errorf("The '%s' claim was not of type Number", name)
	}
	f, err := n.Float64()
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false, fmt.Errorf("The '%s' claim is not a usable number", name)
	}
	return f, true, nil
}

// scope reads the scope claim: a string (one scope) or a list.
func (j UnsecuredJWS) scope(name string) ([]string, error) {
	switch v := j.Claims[name].(type) {
	case nil:
		return nil, nil
	case string:
		if s := strings.TrimSpace(v); s != "" {
			return []string{s}, nil
		}
		return nil, nil
	case []any:
		var out []string
		for _, e := range v {
			var s string
			switch x := e.(type) {
			case string:
				s = x
			default:
				s = fmt.Sprint(x)
			}
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		return out, nil
	default:
		return nil, fmt.Errorf("The '%s' claim was not of type List", name)
	}
}

func invalidToken(format string, args ...any) *TokenError {
	return &TokenError{Status: "invalid_token", Reason: fmt.Sprintf(format, args...)}
}

func secondsToTime(s float64) time.Time { return time.UnixMilli(int64(math.Round(s * 1000))) }

// Validate applies Kafka's checks in its order: a string principal claim,
// iat not in the future, exp present and not past, exp after iat, and
// every required scope present.
func (v *UnsecuredValidator) Validate(token string) (OAuthBearerToken, *TokenError) {
	j, err := ParseUnsecuredJWS(token)
	if err != nil {
		return OAuthBearerToken{}, invalidToken("%v", err)
	}
	scope, err := j.scope(v.ScopeClaimName)
	if err != nil {
		return OAuthBearerToken{}, invalidToken("%v", err)
	}
	exp, hasExp, err := j.numberClaim("exp")
	if err != nil {
		return OAuthBearerToken{}, invalidToken("%v", err)
	}
	if !hasExp {
		return OAuthBearerToken{}, invalidToken("No expiration time in JWT")
	}
	principal, isString := j.Claims[v.PrincipalClaimName].(string)
	if _, present := j.Claims[v.PrincipalClaimName]; !present {
		return OAuthBearerToken{}, invalidToken("Required claim missing: %s", v.PrincipalClaimName)
	}
	if !isString || strings.TrimSpace(principal) == "" {
		return OAuthBearerToken{}, invalidToken("No principal name in JWT claim: %s", v.PrincipalClaimName)
	}
	iat, hasIat, err := j.numberClaim("iat")
	if err != nil {
		return OAuthBearerToken{}, invalidToken("%v", err)
	}
	now := v.Now()
	skewMs := float64(v.AllowableClockSkew.Milliseconds())
	nowMs := float64(now.UnixMilli())
	if hasIat && 1000*iat > nowMs+skewMs {
		return OAuthBearerToken{}, invalidToken("The Issued At value (%f seconds) was after the indicated time (%d ms) plus allowable clock skew (%d ms)", iat, now.UnixMilli(), v.AllowableClockSkew.Milliseconds())
	}
	if nowMs-skewMs >= 1000*exp {
		return OAuthBearerToken{}, invalidToken("The indicated time (%d ms) minus allowable clock skew (%d ms) was on or after the Expiration Time value (%f seconds)", now.UnixMilli(), v.AllowableClockSkew.Milliseconds(), exp)
	}
	if hasIat && exp <= iat {
		return OAuthBearerToken{}, invalidToken("The Expiration Time time (%f seconds) was not after the Issued At time (%f seconds)", exp, iat)
	}
	for _, req := range v.RequiredScope {
		found := false
		for _, s := range scope {
			found = found || s == req
		}
		if !found {
			return OAuthBearerToken{}, &TokenError{Status: "insufficient_scope", Scope: "[" + strings.Join(v.RequiredScope, ", ") + "]",
				Reason: fmt.Sprintf("The provided scope (%v) was missing a required scope (%s).  All required scope elements: %v", scope, req, v.RequiredScope)}
		}
	}
	return OAuthBearerToken{Principal: principal, Expiry: secondsToTime(exp), Scope: scope}, nil
}
