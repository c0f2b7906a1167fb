package handlers

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"

	"github.com/superstep-dev/superstep/web"
)

// anonymousKey marks a request RequireToken let through without a token
// (only /healthz): handlers answer it without details.
type anonymousKey struct{}

// anonymous reports whether RequireToken let r through without a token.
func anonymous(r *http.Request) bool {
	v, _ := r.Context().Value(anonymousKey{}).(bool)
	return v
}

// SessionCookie is the cookie the login form sets.
const SessionCookie = "studio_session"

// RequireToken guards next with a shared bearer token: every request must
// carry `Authorization: Bearer <token>` or the session cookie the login
// form sets, else it gets 401 and the login form. An empty token turns the
// guard off. Only /login, /static/ (the form's stylesheet) and
// /favicon.ico are open, and /healthz, which answers a request without the
// token with up or down alone (the backends and the database error stay
// behind the token).
// Tokens are compared in constant time, and never read from a query
// string (URLs end up in logs and browser history).
//
// The cookie holds an HMAC of the token, not the token, so a leaked
// cookie does not reveal the token itself; changing the token ends every
// session. It is HttpOnly and SameSite=Strict (Secure on TLS), and the
// websocket is covered because browsers send it on the upgrade request.
func RequireToken(token string, next http.Handler) http.Handler {
	if token == "" {
		return next
	}
	want := sha256.Sum256([]byte(token))
	session := sessionValue(token)
	ok := func(r *http.Request) bool {
		if h := r.Header.Get("Authorization"); h != "" {
			scheme, got, found := strings.Cut(h, " ")
			if found && strings.EqualFold(scheme, "Bearer") {
				g := sha256.Sum256([]byte(strings.TrimSpace(got)))
				return subtle.ConstantTimeCompare(g[:], want[:]) == 1
			}
			return false
		}
		if c, err := r.Cookie(SessionCookie); err == nil {
			return subtle.ConstantTimeCompare([]byte(c.Value), []byte(session)) == 1
		}
		return false
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/login":
			login(w, r, want, session)
			return
		case strings.HasPrefix(r.URL.Path, "/static/"), r.URL.Path == "/favicon.ico":
			next.ServeHTTP(w, r)
			return
		case ok(r):
			next.ServeHTTP(w, r)
			return
		case r.URL.Path == "/healthz":
			// A load balancer's health check carries no token: it gets
			// up or down, and nothing else (see Health).
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), anonymousKey{}, true)))
			return
		}
		unauthorized(w, r, r.URL.RequestURI(), "")
	})
}

func sessionValue(token string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("superstep studio session v1"))
	return hex.EncodeToString(m.Sum(nil))
}

func unauthorized(w http.ResponseWriter, r *http.Request, next, msg string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="Superstep Studio"`)
	render(w, r, nil, http.StatusUnauthorized, web.Login(web.LoginView{Next: safeNext(next), Error: msg}))
}

// login serves the token form (GET) and checks it (POST), then sends the
// person back where they were going.
func login(w http.ResponseWriter, r *http.Request, want [32]byte, session string) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		render(w, r, nil, http.StatusOK, web.Login(web.LoginView{Next: safeNext(r.URL.Query().Get("next"))}))
	case http.MethodPost:
		if err := parseForm(r); err != nil {
			fail(w, r, nil, err)
			return
		}
		g := sha256.Sum256([]byte(r.PostForm.Get("token")))
		if subtle.ConstantTimeCompare(g[:], want[:]) != 1 {
			unauthorized(w, r, r.PostForm.Get("next"), "That is not the token this Studio was started with.")
			return
		}
		http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: session, Path: "/", HttpOnly: true,
			SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
		http.Redirect(w, r, safeNext(r.PostForm.Get("next")), http.StatusSeeOther)
	default:
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// safeNext keeps a redirect target on this site: a path on this host,
// never another host or a scheme. The target is checked as browsers will
// read it, not as written: URL parsers drop tabs and newlines anywhere
// and treat '\\' as '/', so "/\t/evil.example" and "/\\evil.example" both
// mean "//evil.example", another host. Anything with a control
// character, a space or a backslash is refused outright; what is left
// must parse as a path alone (no scheme, host, user or opaque part) that
// does not start with "//". Anything else, and the login page itself,
// goes to "/".
func safeNext(next string) string {
	const home = "/"
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") {
		return home
	}
	if strings.ContainsFunc(next, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '\\' }) {
		return home
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" || u.Path == "/login" {
		return home
	}
	return next
}
