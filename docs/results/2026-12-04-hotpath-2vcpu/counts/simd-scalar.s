L:
	movsd	(%r9,%r10,8), %xmm2
	mulsd	(%r8,%r10,8), %xmm2
	mulsd	(%rdx,%r10,8), %xmm2
	addsd	%xmm2, %xmm0
	andpd	%xmm1, %xmm2
	xorl	%r11d, %r11d
	ucomisd	(%rcx,%r10,8), %xmm2
	movsd	0x8(%r9,%r10,8), %xmm2
	seta	%r11b
	mulsd	0x8(%r8,%r10,8), %xmm2
	mulsd	0x8(%rdx,%r10,8), %xmm2
	addq	%rax, %r11
	addsd	%xmm2, %xmm0
	andpd	%xmm1, %xmm2
	xorl	%eax, %eax
	ucomisd	0x8(%rcx,%r10,8), %xmm2
	leaq	0x2(%r10), %r10
	seta	%al
	addq	%r11, %rax
	cmpq	%r10, %rdi
	jne	L
