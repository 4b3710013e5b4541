"""tau-Lop (paper 000 section 3): parameters, the exact event-driven engine, and the symbolic algebra."""
